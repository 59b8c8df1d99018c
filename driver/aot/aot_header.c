/* driver/aot/aot_header.c: the C header of a library built ahead of time: self-contained
 * (the C library's headers only), one declaration per function, each with the function's
 * .fuse signature above it, and the two queries every library has. Names that C would not
 * take (a keyword, a parameter named like a dim or a result) get an underscore.
 */
#include "driver/aot/aot_write.h"

#include <string.h>

#include "fusec.h"

static const char *const keywords[] = {
    "auto",     "break",  "case",      "char",     "const",     "continue", "default",  "do",
    "double",   "else",   "enum",      "extern",   "float",     "for",      "goto",     "if",
    "inline",   "int",    "long",      "register", "restrict",  "return",   "short",    "signed",
    "sizeof",   "static", "struct",    "switch",   "typedef",   "union",    "unsigned", "void",
    "volatile", "while",  "bool",      "true",     "false",     "stream",   "int64_t",  "uint16_t",
    "int32_t",  "float",  "class",     "new",      "delete",    "this",     "template", "operator",
    "private",  "public", "protected", "virtual",  "namespace", "using",    "friend",   "NULL"};

/* The C type of a pointer to dtype t's elements. */
static const char *c_type(ir_dtype t) {
    switch (t) {
    case IR_BOOL: return "bool";
    case IR_I32: return "int32_t";
    case IR_I64: return "int64_t";
    case IR_F16:
    case IR_BF16: return "uint16_t";
    case IR_F32: return "float";
    case IR_F64: return "double";
    default: return "void";
    }
}

/* Whether `name` is taken: a keyword, or one of the names already given. */
static int taken(const char *name, const char *const *given, int n) {
    for (size_t i = 0; i < sizeof keywords / sizeof keywords[0]; i++)
        if (!strcmp(name, keywords[i])) return 1;
    for (int i = 0; i < n; i++)
        if (!strcmp(name, given[i])) return 1;
    return 0;
}

/* A C name for `want` in the arena, underscores added until it is free; added to given. */
static const char *c_name(ir_arena *a, const char *want, const char **given, int *n) {
    const char *name = want;
    while (taken(name, given, *n))
        name = ir_arena_printf(a, "%s_", name);
    given[(*n)++] = name;
    return name;
}

static void declare(ir_buf *out, const char *lib, const ir_func *f) {
    ir_arena *a = out->arena;
    const char **given =
        ir_arena_calloc(a, (size_t)(f->nparams + f->noutputs + f->nsyms + 1), sizeof(char *));
    int n = 0;
    ir_buf_printf(out, "\n/* fn %s(", f->name);
    for (int32_t i = 0; i < f->nparams; i++) {
        ir_buf_printf(out, "%s%s: %s", i ? ", " : "", f->params[i].name,
                      ir_dtypes[f->params[i].dtype].name);
        ir_print_shape(out, f, &f->params[i].shape);
    }
    ir_buf_puts(out, ") -> ");
    for (int32_t i = 0; i < f->noutputs; i++) {
        ir_buf_printf(out, "%s%s", i ? ", " : "", ir_dtypes[f->outputs[i].dtype].name);
        ir_print_shape(out, f, &f->outputs[i].shape);
    }
    ir_buf_printf(out, " */\nint %s_%s(", lib, f->name);
    for (int32_t i = 0; i < f->nparams; i++)
        ir_buf_printf(out, "%sconst %s *%s", i ? ", " : "", c_type(f->params[i].dtype),
                      c_name(a, f->params[i].name, given, &n));
    for (int32_t i = 0; i < f->noutputs; i++)
        ir_buf_printf(out, "%s%s *%s", f->nparams + i ? ", " : "", c_type(f->outputs[i].dtype),
                      c_name(a, ir_arena_printf(a, "out%d", (int)i), given, &n));
    for (int32_t i = 0; i < f->nsyms; i++)
        ir_buf_printf(out, ", int64_t %s", c_name(a, f->syms[i], given, &n));
    ir_buf_puts(out, ", void *stream);\n");
}

void rt_aot_header(ir_buf *out, const char *name, const ir_func *const *funcs,
                   const rt_aot_entry *entries, int n, const char *target) {
    (void)entries;
    int cuda = !strcmp(target, "cuda");
    ir_buf_printf(out,
                  "/* %s.h: the entry points of lib%s.a, written by fusec %s (fusec --emit=lib). "
                  "Do not edit.\n *\n",
                  name, name, FUSEC_VERSION_STRING);
    ir_buf_puts(out, " * Each function takes one pointer per parameter (const) and per result, to "
                     "dense row-major\n");
    ir_buf_puts(out, cuda
                         ? " * device memory of CUDA device 0 (cuMemAlloc's, a PyTorch tensor's on "
                           "cuda:0), then the value of\n * each symbolic dim, then a CUstream "
                           "(NULL: the legacy default stream; calls are\n * asynchronous on "
                           "it).\n"
                         : " * host memory, then the value of each symbolic dim, then a stream, "
                           "ignored on the CPU\n * (calls return when their results are "
                           "written).\n");
    ir_buf_printf(out,
                  " * A function returns 0, or else a fusec_status: 1 an invalid argument (no "
                  "data, misaligned,\n * overlapping buffers), 5 a shape too large, 7 out of "
                  "memory, 8 no code in the library that\n * this machine runs, 9 no CUDA "
                  "driver or device, 11 a driver error, 12 an error at run time\n * (max over "
                  "an empty axis), 13 an internal error; %s_last_error() then says why. f16 and\n"
                  " * bf16 elements are uint16_t (their bits). A result may be the very buffer "
                  "of a parameter of\n * its dtype and shape (in place); no other buffers may "
                  "overlap. Calls from several threads at\n * once are safe. */\n",
                  name);
    ir_buf_printf(out,
                  "#ifndef %s_FUSEC_H\n#define %s_FUSEC_H\n\n#include <stdbool.h>\n"
                  "#include <stdint.h>\n\n#ifdef __cplusplus\nextern \"C\" {\n#endif\n",
                  name, name);
    for (int i = 0; i < n; i++)
        declare(out, name, funcs[i]);
    ir_buf_printf(out,
                  "\n/* The message of this thread's last failed call (\"\" when none failed). "
                  "*/\nconst char *%s_last_error(void);\n"
                  "/* The %s whose code the library runs on this machine (\"x86-64-v3\"), or "
                  "NULL when it holds\n * none that runs here. */\nconst char *%s_target(void);\n",
                  name, !strcmp(target, "cuda") ? "architecture" : "CPU", name);
    ir_buf_puts(out, "\n#ifdef __cplusplus\n}\n#endif\n\n#endif\n");
}
