/* tests/install/consumer/main.c: a program built against an installed fusec only (its
 * header, its library), by find_package and by pkg-config (tests/install/run.sh). It
 * compiles a small program on the reference interpreter, which needs no LLVM and no GPU,
 * launches it on host values and checks the results and the library's version. */
#include <fusec.h>
#include <stdio.h>
#include <string.h>

static const char SRC[] = "fn axpy(x: f32[N], y: f32[N]) -> f32[N] {\n"
                          "    return 2.0 * x + y;\n"
                          "}\n";

int main(void) {
    if (fusec_version_number() != FUSEC_VERSION_NUMBER) {
        fprintf(stderr, "consumer: library version %s, header %s\n", fusec_version_string(),
                FUSEC_VERSION_STRING);
        return 1;
    }
    fusec_options opt;
    fusec_options_init(&opt);
    opt.target = FUSEC_TARGET_REF;
    opt.no_cache = 1; /* leave the user's cache alone */
    fusec_module *m = NULL;
    fusec_function *f = NULL;
    if (fusec_module_compile_string("axpy.fuse", SRC, strlen(SRC), &opt, &m) != FUSEC_OK ||
        fusec_module_function(m, "axpy", &f) != FUSEC_OK) {
        fprintf(stderr, "consumer: %s%s\n", fusec_module_diagnostics(m), fusec_module_message(m));
        fusec_module_free(m);
        return 1;
    }
    float x[5] = {-2, -1, 0, 1, 2.5f}, y[5] = {10, 20, 30, 40, 50}, z[5] = {0};
    fusec_tensor in[2] = {{x, FUSEC_F32, 1, {5}, NULL}, {y, FUSEC_F32, 1, {5}, NULL}};
    fusec_tensor out = {z, FUSEC_F32, 1, {5}, NULL};
    fusec_status st = fusec_launch(f, in, 2, &out, 1, NULL);
    if (st != FUSEC_OK) {
        fprintf(stderr, "consumer: launch failed (%d): %s\n", (int)st, fusec_module_message(m));
        fusec_module_free(m);
        return 1;
    }
    int bad = 0;
    for (int i = 0; i < 5; i++) {
        float want = 2 * x[i] + y[i]; /* exact in f32 for these values */
        if (z[i] != want) {
            fprintf(stderr, "consumer: axpy[%d] = %g, want %g\n", i, z[i], want);
            bad = 1;
        }
    }
    fusec_module_free(m);
    if (!bad) printf("consumer: ok (fusec %s)\n", fusec_version_string());
    return bad;
}
