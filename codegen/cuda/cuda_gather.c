/* codegen/cuda/cuda_gather.c: the gather kernels of a module: one per element size its
 * parameters have, each reading a strided input (SPEC §3: inputs may have any strides) into a
 * dense temporary that the function's kernels then read as they read any dense input. The
 * launcher runs them before the function's launches, only for inputs that are strided.
 *
 * Why a copy rather than strided kernels: every engine (vector loads, tiles, row engines)
 * assumes dense row-major buffers, and a variant per layout would multiply them; a gather
 * costs one more read and write of that input, the price the SPEC allows ("a kernel may take
 * a slower path"). The layout travels by value (every argument is 8 bytes, as the launcher
 * and the emulated driver pass them): the element count, the rank after the launcher merged
 * what it could (CUDA_GATHER_MAX_RANK at most), then the dims and the strides (in elements),
 * padded. Element i of the dense order is at src + sum(coord_d(i) * stride_d).
 */
#include <string.h>

#include "codegen/cuda/cuda_internal.h"

/* the unsigned type that moves an element of each size: bytes 1, 2, 4, 8 */
static const char *const move_type[4] = {"unsigned char", "unsigned short", "unsigned int",
                                         "unsigned long long"};

static int size_log2(int bytes) {
    return bytes == 1 ? 0 : bytes == 2 ? 1 : bytes == 4 ? 2 : 3;
}

static void emit_gather(cugen_module *m, ir_buf *out, int lg, const char *name) {
    const char *t = move_type[lg];
    ir_buf_printf(out,
                  "\n/* a strided input into a dense temporary: %d-byte elements */\n"
                  "extern \"C\" __global__ void __launch_bounds__(%d) %s(%s *__restrict__ dst, "
                  "const %s *__restrict__ src, long long n_, long long rank_",
                  1 << lg, CUDA_GATHER_BLOCK, name, t, t);
    for (int d = 0; d < CUDA_GATHER_MAX_RANK; d++)
        ir_buf_printf(out, ", long long d%d_", d);
    for (int d = 0; d < CUDA_GATHER_MAX_RANK; d++)
        ir_buf_printf(out, ", long long s%d_", d);
    ir_buf_puts(out, ") {\n    const long long dim[] = {");
    for (int d = 0; d < CUDA_GATHER_MAX_RANK; d++)
        ir_buf_printf(out, "%sd%d_", d ? ", " : "", d);
    ir_buf_puts(out, "};\n    const long long stride[] = {");
    for (int d = 0; d < CUDA_GATHER_MAX_RANK; d++)
        ir_buf_printf(out, "%ss%d_", d ? ", " : "", d);
    /* the unrolled loop indexes the arrays with constants: they stay in registers */
    ir_buf_printf(out,
                  "};\n"
                  "    for (long long i = blockIdx.x * (long long)blockDim.x + threadIdx.x; i < "
                  "n_;\n"
                  "         i += (long long)gridDim.x * blockDim.x) {\n"
                  "        long long rest = i, off = 0;\n"
                  "#pragma unroll\n"
                  "        for (int d = %d; d > 0; d--)\n"
                  "            if (d < rank_) {\n"
                  "                off += rest %% dim[d] * stride[d];\n"
                  "                rest /= dim[d];\n"
                  "            }\n"
                  "        dst[i] = src[off + rest * stride[0]];\n"
                  "    }\n"
                  "}\n",
                  CUDA_GATHER_MAX_RANK - 1);
    IR_VEC_PUSH(m->a, m->names, m->nnames, m->cap_names, name);
}

void cugen_gen_gathers(cugen_module *m, ir_func *const *funcs, int nfuncs, cuda_func *fs,
                       ir_buf *out) {
    const char *names[4] = {NULL, NULL, NULL, NULL};
    for (int i = 0; i < nfuncs; i++) {
        const ir_func *f = funcs[i];
        const char **g =
            ir_arena_calloc(m->a, (size_t)(f->nparams ? f->nparams : 1), sizeof(const char *));
        for (int32_t p = 0; p < f->nparams; p++) {
            if (f->params[p].shape.rank == 0) continue; /* one element: never strided */
            int lg = size_log2(ir_dtypes[f->params[p].dtype].bytes);
            if (!names[lg]) {
                /* a double underscore: no function's kernel (fusec_<name>_k...) has this name */
                names[lg] = ir_arena_printf(m->a, "fusec__gather%d", 8 << lg);
                emit_gather(m, out, lg, names[lg]);
            }
            g[p] = names[lg];
        }
        fs[i].gather = g;
    }
}
