/* tests/fuzz/fuzz_frontend.c: libFuzzer target for the whole front end. Any byte string is
 * lexed, parsed, checked and lowered, and the AST printed; ASan/UBSan and libFuzzer catch
 * crashes, leaks, hangs and memory blow-ups. Built by -DFUSEC_FUZZ=ON (clang). */
#include "frontend/frontend.h"

#include <setjmp.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size) {
    /* the source must end in a NUL sentinel; NULs inside it are part of the input */
    char *src = malloc(size + 1);
    if (!src) return 0;
    if (size) memcpy(src, data, size);
    src[size] = 0;

    ir_arena arena;
    ir_arena_init(&arena);
    /* as the compile entry point does: a failed allocation unwinds instead of returning NULL */
    arena.limit = (size_t)1 << 30;
    jmp_buf oom;
    if (setjmp(oom) == 0) {
        arena.oom = &oom;
        diag_ctx d;
        diag_init(&d, &arena, "fuzz.fuse", src, size);
        ast_file *file = NULL;
        parse_file(&d, &file);
        ir_buf ast;
        ir_buf_init(&ast, &arena);
        parse_print_ast(&ast, file);
        ir_module *module = NULL;
        check_file(&d, file, &module);
    }
    ir_arena_free(&arena);
    free(src);
    return 0;
}
