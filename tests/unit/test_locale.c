/* tests/unit/test_locale.c: a program that embeds libfusec under a locale whose decimal
 * separator is a comma (de_DE) still gets its literals read as the SPEC writes them and its
 * generated code and IR printed with points: the library works in the "C" locale whatever
 * the program's is. When the system lacks de_DE, the test builds it into a temporary
 * directory (localedef, LOCPATH); without localedef or its sources it is skipped (77). */
#include <locale.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "api_util.h"
#include "check.h"

static const char *SRC = "fn f(x: f32[N]) -> f32[N] { return 0.5 * x + 1.25e-1; }\n";

/* de_DE in a temporary directory LOCPATH points to; 0 when it cannot be made. */
static int make_locale(char *dir) {
    if (!mkdtemp(dir)) return 0;
    char cmd[512];
    snprintf(cmd, sizeof cmd, "localedef -i de_DE -f UTF-8 %s/de_DE.UTF-8 >/dev/null 2>&1", dir);
    if (system(cmd) != 0) return 0;
    return setenv("LOCPATH", dir, 1) == 0;
}

int main(void) {
    char dir[] = "/tmp/fusec-test-locale-XXXXXX";
    int made = 0;
    if (!setlocale(LC_ALL, "de_DE.UTF-8") &&
        (!(made = make_locale(dir)) || !setlocale(LC_ALL, "de_DE.UTF-8"))) {
        printf("the de_DE.UTF-8 locale is not available and localedef cannot make it: "
               "skipping\n");
        return 77;
    }
    char probe[16];
    snprintf(probe, sizeof probe, "%.1f", 1.5);
    CHECK_MSG(strcmp(probe, "1,5") == 0, "the locale does not use a comma: %s", probe);

    fusec_module *m = api_compile(SRC, FUSEC_TARGET_REF, 0, NULL, 0);
    float x[3] = {1, 2, 4}, y[3];
    fusec_tensor in = {x, FUSEC_F32, 1, {3}, NULL}, out = {y, FUSEC_F32, 1, {3}, NULL};
    CHECK_MSG(fusec_launch(api_fn(m, "f"), &in, 1, &out, 1, NULL) == FUSEC_OK, "%s",
              fusec_module_message(m));
    for (int i = 0; i < 3; i++)
        CHECK_MSG(y[i] == 0.5f * x[i] + 0.125f, "f(%g) = %g", x[i], y[i]);

    static const fusec_emit kinds[] = {FUSEC_EMIT_AST, FUSEC_EMIT_IR, FUSEC_EMIT_CUDA};
    for (int k = 0; k < 3; k++) {
        char *text = NULL;
        CHECK(fusec_module_emit(m, kinds[k], &text, NULL) == FUSEC_OK);
        CHECK_MSG(text && strstr(text, "0,5") == NULL && strstr(text, "0,125") == NULL,
                  "emit %d printed a comma:\n%s", (int)kinds[k], text ? text : "");
        fusec_free(text);
    }
    fusec_module_free(m);

    /* the program's own locale is left as it was */
    snprintf(probe, sizeof probe, "%.1f", 1.5);
    CHECK_MSG(strcmp(probe, "1,5") == 0, "the library changed the program's locale: %s", probe);
    if (made) {
        char cmd[512];
        snprintf(cmd, sizeof cmd, "rm -rf '%s'", dir);
        if (system(cmd) != 0) fprintf(stderr, "cannot remove %s\n", dir);
    }
    return check_exit("test_locale");
}
