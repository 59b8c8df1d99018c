/* fusec.h: the public C interface of libfusec, the kernel-fusion JIT compiler.
 *
 * A program compiles a .fuse source once into a module, looks its functions up by name,
 * and launches them on tensors it owns. Every call returns a fusec_status; a message for
 * the last failure of a handle is kept on that handle (fusec_module_message).
 *
 *     fusec_options opt;
 *     fusec_options_init(&opt);
 *     fusec_module *m = NULL;
 *     if (fusec_module_compile_file("gelu.fuse", &opt, &m) != FUSEC_OK) {
 *         fprintf(stderr, "%s", fusec_module_diagnostics(m));
 *     }
 *     fusec_function *f = NULL;
 *     fusec_module_function(m, "gelu", &f);
 *     fusec_tensor x = {xs, FUSEC_F32, 1, {n}, NULL}, y = {ys, FUSEC_F32, 1, {n}, NULL};
 *     fusec_launch(f, &x, 1, &y, 1, NULL);
 *     fusec_module_free(m);
 *
 * Thread safety: functions without a handle are safe from any thread. A module and its
 * functions may be used from several threads at once once compiled (launches only read
 * them); fusec_module_free must not race with any other use of the module.
 */
#ifndef FUSEC_H
#define FUSEC_H

#include <stddef.h>
#include <stdint.h>

#ifdef __cplusplus
extern "C" {
#endif

#if defined(_WIN32)
#define FUSEC_API
#elif defined(__GNUC__)
#define FUSEC_API __attribute__((visibility("default")))
#else
#define FUSEC_API
#endif

/* ---- version -------------------------------------------------------------------------- */

#define FUSEC_VERSION_MAJOR 0
#define FUSEC_VERSION_MINOR 7
#define FUSEC_VERSION_PATCH 0
#define FUSEC_VERSION_NUMBER                                                                       \
    (FUSEC_VERSION_MAJOR * 10000 + FUSEC_VERSION_MINOR * 100 + FUSEC_VERSION_PATCH)
#define FUSEC_VERSION_STRING "0.7.0"

/* The library's FUSEC_VERSION_NUMBER: compare with the header's to detect a mismatch. */
FUSEC_API unsigned fusec_version_number(void);
FUSEC_API const char *fusec_version_string(void);

/* ---- statuses ------------------------------------------------------------------------- */

/* Values are pinned: they never change meaning between versions. */
typedef enum fusec_status {
    FUSEC_OK = 0,
    FUSEC_ERR_INVALID_ARGUMENT = 1, /* a NULL handle, an out-of-range value, a bad option */
    FUSEC_ERR_SOURCE = 2,           /* the source did not compile: see the diagnostics */
    FUSEC_ERR_IO = 3,               /* a file could not be read or written */
    FUSEC_ERR_NOT_FOUND = 4,        /* no function of that name */
    FUSEC_ERR_SHAPE = 5,            /* a tensor's rank or dims do not fit the signature */
    FUSEC_ERR_DTYPE = 6,            /* a tensor's dtype is not the parameter's */
    FUSEC_ERR_OUT_OF_MEMORY = 7,    /* an allocation failed, on the host or the device */
    FUSEC_ERR_UNSUPPORTED = 8,      /* the target is not built in, or cannot do this */
    FUSEC_ERR_NO_DEVICE = 9,        /* no CUDA driver or device was found */
    FUSEC_ERR_COMPILER = 10,        /* the backend compiler (NVRTC, LLVM) failed */
    FUSEC_ERR_DRIVER = 11,          /* the CUDA driver failed */
    FUSEC_ERR_RUNTIME = 12,         /* the program failed at run time (max of an empty axis) */
    FUSEC_ERR_INTERNAL = 13,        /* a bug in fusec */
} fusec_status;

/* A short constant description of a status ("source error"); never NULL. */
FUSEC_API const char *fusec_status_string(fusec_status s);

/* ---- dtypes --------------------------------------------------------------------------- */

/* Element types. Host storage: bool as uint8_t (0/1), f16 and bf16 as uint16_t bits. */
typedef enum fusec_dtype {
    FUSEC_BOOL = 0,
    FUSEC_I32 = 1,
    FUSEC_I64 = 2,
    FUSEC_F16 = 3,
    FUSEC_BF16 = 4,
    FUSEC_F32 = 5,
    FUSEC_F64 = 6,
} fusec_dtype;

FUSEC_API const char *fusec_dtype_name(fusec_dtype t); /* "f32"; "?" when out of range */
FUSEC_API size_t fusec_dtype_size(fusec_dtype t);      /* bytes; 0 when out of range */

/* Converts count host elements from one dtype to another (src and dst must not overlap):
 * to f16/bf16 rounds to nearest even (integers beyond 2^53 go through double first); float
 * to integer truncates toward zero and saturates (NaN gives 0); integer to integer wraps;
 * anything to bool is `!= 0`. */
FUSEC_API fusec_status fusec_convert(fusec_dtype from, const void *src, fusec_dtype to, void *dst,
                                     size_t count);

/* ---- options -------------------------------------------------------------------------- */

typedef enum fusec_target {
    FUSEC_TARGET_AUTO = 0, /* CUDA when a GPU and its driver are present, else the CPU */
    FUSEC_TARGET_CUDA = 1,
    FUSEC_TARGET_CPU = 2,
    FUSEC_TARGET_REF = 3, /* the reference interpreter (float64): slow, the oracle */
} fusec_target;

typedef struct fusec_options {
    size_t struct_size;     /* sizeof(fusec_options): set by fusec_options_init */
    fusec_target target;    /* where kernels run (default FUSEC_TARGET_AUTO) */
    const char *arch;       /* "sm_90": CUDA code for that architecture; NULL: the GPU's own */
    int no_fuse;            /* every operation its own kernel (the unfused baseline) */
    int fast_math;          /* approximate transcendentals */
    int no_cache;           /* neither read nor write the disk cache */
    const char *cache_dir;  /* NULL: $FUSEC_CACHE_DIR, $XDG_CACHE_HOME/fusec, ~/.cache/fusec */
    int verbose;            /* collect phase timings and per-kernel reports (fusec_module_report) */
    const char *dump_after; /* pass name: record the IR after that pass (fusec_module_report) */
    /* Since 0.2. The CPU target's CPU: "x86-64-v2", "x86-64-v3", "x86-64-v4", "znver3",
     * "sapphirerapids", ... (docs/cpu.md lists them); NULL: $FUSEC_CPU, else "native" (the
     * host). Code built for a CPU whose instructions the host lacks is built and cached but
     * never run: launches return FUSEC_ERR_UNSUPPORTED. An unknown name fails the compilation
     * with FUSEC_ERR_INVALID_ARGUMENT. */
    const char *cpu;
    /* Since 0.6. NULL: every function of the module is built. A function's name: that one
     * alone goes through the passes and is built (what `fusec run -f` does: a file of twenty
     * functions then costs the compile time of one); the others keep their signatures, and
     * launching one of them fails with FUSEC_ERR_INVALID_ARGUMENT. A name the module lacks
     * fails the compilation with FUSEC_ERR_INVALID_ARGUMENT. */
    const char *function;
    /* Since 0.7. The CUDA device (its ordinal among those the driver shows) the module runs
     * on; -1 (fusec_options_init's): any, each launch on the device of its tensors' memory
     * (else of its stream, else the calling thread's current device, as cudaGetDevice gives
     * it). A launch with memory or a stream of another device than the one set is refused
     * (FUSEC_ERR_INVALID_ARGUMENT). The build is for the architecture of this device, or of
     * the current device; a device of another architecture gets its own build at its first
     * launch. */
    int device;
} fusec_options;

/* Fills *opt with the defaults (target auto, fusion on, cache on). */
FUSEC_API void fusec_options_init(fusec_options *opt);

/* ---- modules -------------------------------------------------------------------------- */

/* A compiled .fuse source. Thread safety: see the top of this file. */
typedef struct fusec_module fusec_module;
/* A function of a module, owned by the module (valid until the module is freed). */
typedef struct fusec_function fusec_function;

/* Compiles a file or a string. On FUSEC_OK or FUSEC_ERR_SOURCE (and other failures after
 * the module could be made) *out is a module holding the diagnostics, which the caller
 * frees; it is NULL only when memory ran out or an argument was invalid. `name` is the
 * path shown in diagnostics for a string. `opt` may be NULL (defaults). */
FUSEC_API fusec_status fusec_module_compile_file(const char *path, const fusec_options *opt,
                                                 fusec_module **out);
FUSEC_API fusec_status fusec_module_compile_string(const char *name, const char *src, size_t len,
                                                   const fusec_options *opt, fusec_module **out);
/* Generates, compiles (through the disk cache) and loads the module's kernels for its
 * target. The first launch does it when it was not done before; call it to pay the cost up
 * front or to fill the cache (`fusec FILE.fuse` does). With target CUDA and an explicit
 * arch, the kernels are built without a device (launches then fail with
 * FUSEC_ERR_NO_DEVICE). Later calls return the first call's status. */
FUSEC_API fusec_status fusec_module_build(fusec_module *m);

/* Frees the module, its functions and everything it allocated. NULL is accepted. On CUDA,
 * when its kernels were launched, it first waits for the device to finish the work queued in
 * the context (its kernels may be among it, on any stream), so it must not be called while a
 * stream is being captured, as cudaFree must not. */
FUSEC_API void fusec_module_free(fusec_module *m);

/* Warnings and errors of the compilation, in the form FILE:LINE:COL: error: MESSAGE with
 * the source line and a caret; "" when there were none or m is NULL. */
FUSEC_API const char *fusec_module_diagnostics(const fusec_module *m);
/* The message of the last failed call on this module or its functions; "" if none. */
FUSEC_API const char *fusec_module_message(const fusec_module *m);
/* The target the module was compiled for (AUTO resolved). */
FUSEC_API fusec_target fusec_module_target(const fusec_module *m);

typedef enum fusec_emit {
    FUSEC_EMIT_AST = 0,
    FUSEC_EMIT_IR = 1, /* after fusion: the kernel partition */
    FUSEC_EMIT_CUDA = 2,
    FUSEC_EMIT_PTX = 3,
    FUSEC_EMIT_CUBIN = 4,
    FUSEC_EMIT_LLVM = 5,
    FUSEC_EMIT_PLAN = 6, /* the kernel plan the target's code generator follows (0.3.0) */
} fusec_emit;

/* The module's text (or binary, for cubin) of the given kind, in *data (malloc'd, free with
 * fusec_free) of *size bytes; text is NUL-terminated. */
FUSEC_API fusec_status fusec_module_emit(fusec_module *m, fusec_emit kind, char **data,
                                         size_t *size);
/* Writes a static library and its C header for the functions of modules compiled for
 * FUSEC_TARGET_CPU or FUSEC_TARGET_CUDA, all for the same one (fusec --emit=lib): for path
 * "DIR/NAME", DIR/NAME.h and DIR/libNAME.a, NAME a C identifier that prefixes every function
 * (int NAME_FN(...)). archs: what the library holds code for, comma-separated: CPUs (NULL or
 * "": "x86-64-v2,x86-64-v3,x86-64-v4") or GPU architectures ("sm_90" a cubin, "compute_90"
 * PTX; NULL or "": every one the installed NVRTC builds from sm_80 up, and PTX for the
 * newest); at run time it runs the best one the machine has. The archive holds the runtime
 * (libfusec_rt) too: a program links it with -lpthread -lm -ldl and nothing else. Needs the
 * LLVM module (which writes the entry points). On failure, the first module's
 * fusec_module_message says why. (0.6.0, issue 31) */
FUSEC_API fusec_status fusec_library_write(fusec_module *const *mods, int nmods, const char *path,
                                           const char *archs);
/* Reports collected with opt.verbose or opt.dump_after: phase timings, per-kernel kinds and
 * bytes, the IR after a pass. "" when none. */
FUSEC_API const char *fusec_module_report(const fusec_module *m);

FUSEC_API int fusec_module_num_functions(const fusec_module *m);
/* Looks a function up by name: FUSEC_ERR_NOT_FOUND when there is none. */
FUSEC_API fusec_status fusec_module_function(fusec_module *m, const char *name,
                                             fusec_function **out);
/* The i-th function in source order, NULL when out of range. */
FUSEC_API fusec_function *fusec_module_function_at(fusec_module *m, int i);

/* ---- signatures ----------------------------------------------------------------------- */

#define FUSEC_MAX_RANK 8
/* Since 0.2: the most parameters and results, together, a function may have (more is a
 * source error). */
#define FUSEC_MAX_ARGS 128

/* One parameter or result as declared: dims[i] is the literal size, or -1 when the dim is
 * symbolic, then dim_names[i] is its name. */
typedef struct fusec_param_info {
    const char *name; /* parameter name; NULL for a result */
    fusec_dtype dtype;
    int rank;
    int64_t dims[FUSEC_MAX_RANK];
    const char *dim_names[FUSEC_MAX_RANK];
} fusec_param_info;

FUSEC_API const char *fusec_function_name(const fusec_function *f);
FUSEC_API int fusec_function_num_params(const fusec_function *f);
FUSEC_API int fusec_function_num_results(const fusec_function *f);
FUSEC_API fusec_status fusec_function_param(const fusec_function *f, int i, fusec_param_info *out);
FUSEC_API fusec_status fusec_function_result(const fusec_function *f, int i, fusec_param_info *out);
/* For a gradient (`fn d = grad(g, wrt=(...))`, 0.4.0): the name of g, NULL when f is no
 * gradient; result i of f is the gradient with respect to parameter
 * fusec_function_grad_wrt(f, i) of g (-1 when f is no gradient or i is out of range). f's
 * parameters are g's, then one cotangent per result of g. */
FUSEC_API const char *fusec_function_grad_of(const fusec_function *f);
FUSEC_API int fusec_function_grad_wrt(const fusec_function *f, int i);

/* ---- launching ------------------------------------------------------------------------ */

/* A tensor. data is a host pointer for the CPU and reference targets, a device pointer
 * (CUdeviceptr) for CUDA, of any device: a call runs on the device its tensors' memory is on
 * (0.7.0; see fusec_launch), in that device's primary context, the one the CUDA runtime and
 * PyTorch use too. It is aligned to the size of an element, the address of element
 * (0, ..., 0); NULL only for a tensor with no elements. strides (0.4.0): NULL for dense
 * row-major (what an initializer that leaves it out gives), else `rank` strides in elements,
 * any sign, 0 to broadcast an axis, as DLPack and PyTorch give them: element (i0, i1, ...)
 * is at data + (i0 * strides[0] + i1 * strides[1] + ...) elements. Inputs may have any
 * strides (a strided one is read into a dense temporary first); results must be dense. The
 * array is read during the call only. */
typedef struct fusec_tensor {
    void *data;
    fusec_dtype dtype;
    int rank;
    int64_t shape[FUSEC_MAX_RANK];
    const int64_t *strides;
} fusec_tensor;

/* Computes the shapes of the results for inputs of the given shapes (only rank and shape of
 * `inputs` are read): results[i].rank and .shape and .dtype are set, .strides to NULL
 * (dense), .data is untouched. */
FUSEC_API fusec_status fusec_function_result_shapes(fusec_function *f, const fusec_tensor *inputs,
                                                    int ninputs, fusec_tensor *results,
                                                    int nresults);

/* Runs f: inputs one per parameter in order, results one per result, each already
 * allocated with its shape and dtype. Descriptors are checked against the signature before
 * anything runs (FUSEC_ERR_SHAPE / FUSEC_ERR_DTYPE with a message naming the parameter;
 * FUSEC_ERR_SHAPE too for shapes whose size no memory could hold). A result may be the very
 * buffer of an input of the same dtype and shape (in place); any other overlap of a result
 * with another tensor, missing or misaligned data, or strides that take an element's address
 * around the end of the address space (below 0, past the top), is FUSEC_ERR_INVALID_ARGUMENT.
 * A refused call writes nothing.
 * `stream` is a CUstream on the CUDA target (NULL: the default stream), ignored elsewhere.
 * On CUDA the launch is asynchronous; on the CPU and reference targets it returns when done.
 * CUDA devices (0.7.0): the call runs on the device its tensors' memory is on, which the
 * driver says (asked on machines of more than one device; one query a tensor); a stream must
 * be one of that device's (of its primary context), and a module whose fusec_options.device
 * is set runs on that device only: tensors of two devices, or a stream or a module of another,
 * are FUSEC_ERR_INVALID_ARGUMENT naming them, before anything runs. With no tensor the driver
 * knows as device memory (all empty), the stream's device, else the module's, else the
 * calling thread's current device. Each device loads the module's kernels at its first call
 * there (building them for its architecture when it differs from the one built for), and
 * keeps its own memory pool and stream.
 * A launch on a stream being captured into a CUDA graph (cuStreamBeginCapture,
 * torch.cuda.graph) is recorded by the capture once the module is built: build it (or launch
 * once) before capturing, since building loads modules, which a capture does not allow. */
FUSEC_API fusec_status fusec_launch(fusec_function *f, const fusec_tensor *inputs, int ninputs,
                                    const fusec_tensor *results, int nresults, void *stream);

/* Since 0.5.0. As fusec_launch, with the tensors as DLPack describes them
 * (https://dmlc.github.io/dlpack/latest/c_api.html), so that any framework's tensors are taken
 * without a conversion: tensors[i] points to a DLTensor (the dl_tensor member of a
 * DLManagedTensor or DLManagedTensorVersioned, which the caller keeps alive and owns), the
 * ninputs inputs first, then the nresults results. The library reads data + byte_offset,
 * shape, strides (NULL: dense) and dtype: bool, int32, int64, float16, bfloat16, float32 or
 * float64 with one lane (anything else: FUSEC_ERR_DTYPE); the device must be one the target
 * reaches (kDLCPU or kDLCUDAHost on the CPU and reference targets, kDLCUDA or kDLCUDAManaged
 * of any device_id below 64 on CUDA, the call running on that device as fusec_launch's
 * does), else FUSEC_ERR_INVALID_ARGUMENT, as is a byte_offset whose sum with data
 * wraps around the address space. Messages name the parameter or result.
 * A DLManagedTensorVersioned's read-only flag is the caller's to honour for results. */
FUSEC_API fusec_status fusec_launch_dlpack(fusec_function *f, const void *const *tensors,
                                           int ninputs, int nresults, void *stream);

/* ---- plans ---------------------------------------------------------------------------- */

/* A function bound to fixed shapes and buffers: on CUDA one CUDA graph holding all its
 * kernels (instantiated once; intermediates from a stream-ordered memory pool), replayed
 * with one call; on the CPU its kernels run in order on the thread pool. Re-binding to new
 * buffers of the same shapes updates the graph in place (no new instantiation).
 * Thread safety: a plan may be launched from several threads at once; rebind and free must
 * not race with any other use of the plan. A plan must be freed before its module. */
typedef struct fusec_plan fusec_plan;

/* Makes a plan of f for these tensors (checked as fusec_launch checks them). On CUDA, its
 * scratch memory is taken on a stream of the library's own and ready when this returns;
 * nothing goes on `stream`, so a plan may be made while `stream` is being captured into a CUDA
 * graph (torch.cuda.graph). */
FUSEC_API fusec_status fusec_plan_create(fusec_function *f, const fusec_tensor *inputs, int ninputs,
                                         const fusec_tensor *results, int nresults, void *stream,
                                         fusec_plan **out);
/* Runs the plan on `stream` (CUDA: asynchronous, one graph launch; NULL: the default
 * stream). On a stream being captured, the run is recorded by the capture: the plan must then
 * outlive the captured graph's replays, whose order against the plan's other runs is the
 * caller's. */
FUSEC_API fusec_status fusec_plan_launch(fusec_plan *p, void *stream);
/* Points the plan at other tensors of the same shapes and dtypes (FUSEC_ERR_SHAPE when the
 * shapes differ: make a new plan for new shapes). Launches already made are not affected. */
FUSEC_API fusec_status fusec_plan_rebind(fusec_plan *p, const fusec_tensor *inputs, int ninputs,
                                         const fusec_tensor *results, int nresults);
/* Frees the plan. On CUDA its scratch memory returns to the pool ordered after the last run
 * outside a capture, on a stream of the library's own; a launch still running completes.
 * Nothing is waited for, so it may be called while a stream is being captured (a garbage
 * collector's free). NULL is accepted. */
FUSEC_API void fusec_plan_free(fusec_plan *p);

/* ---- memory --------------------------------------------------------------------------- */

/* Memory for tensors on the module's target, so one program serves every target: on CUDA,
 * device memory (cuMemAlloc: plain, not managed) of the module's fusec_options.device, else of
 * the calling thread's current device (where cudaMalloc allocates), and synchronous copies
 * (on the device of the device pointer), which wait for the legacy default stream's work but
 * not for other streams' (synchronize those first); an upload has landed when it returns, so
 * a launch on any stream reads it; on the
 * CPU and reference targets, 64-byte aligned host memory and memcpy. A program with CUDA
 * buffers of its own passes them to fusec_launch directly. */
FUSEC_API fusec_status fusec_memory_alloc(fusec_module *m, size_t bytes, void **ptr);
FUSEC_API fusec_status fusec_memory_free(fusec_module *m, void *ptr); /* NULL accepted */
FUSEC_API fusec_status fusec_memory_upload(fusec_module *m, void *dst, const void *host_src,
                                           size_t bytes);
FUSEC_API fusec_status fusec_memory_download(fusec_module *m, void *host_dst, const void *src,
                                             size_t bytes);
/* Waits for the work on `stream` (CUDA, its device's; NULL: the current device's default
 * stream); immediate elsewhere. */
FUSEC_API fusec_status fusec_synchronize(fusec_module *m, void *stream);

/* ---- measuring ------------------------------------------------------------------------- */

/* Kernels one launch of f runs (after fusion, or one per operation with no_fuse). */
FUSEC_API int fusec_function_num_kernels(const fusec_function *f);

/* Runs f once to warm up, then `reps` times, and gives the median time of one launch in
 * milliseconds, measured with the target's own clock (CUDA events on a GPU, the monotonic
 * wall clock elsewhere). Arguments as for fusec_launch. */
FUSEC_API fusec_status fusec_bench_launch(fusec_function *f, const fusec_tensor *inputs,
                                          int ninputs, const fusec_tensor *results, int nresults,
                                          int reps, double *median_ms);

/* What fusec_bench_run measures. */
typedef struct fusec_bench_result {
    double median_ms; /* one launch, by the target's clock (CUDA events, else the wall clock) */
    double min_ms;
    double host_us; /* host time of one launch call, without waiting for the device: the
                       launch overhead (on the CPU the call does the work, so it is the
                       whole time) */
} fusec_bench_result;

/* As fusec_bench_launch, launching through a plan of f when use_plan is set (one graph
 * launch per run) and through fusec_launch otherwise. */
FUSEC_API fusec_status fusec_bench_run(fusec_function *f, const fusec_tensor *inputs, int ninputs,
                                       const fusec_tensor *results, int nresults, int reps,
                                       int use_plan, fusec_bench_result *out);

/* The roofline: the median time the module's target takes to move `bytes` bytes as a plain
 * copy (bytes / 2 read from one buffer and written to another) with all its parallelism
 * (every core on the CPU; a device-to-device copy on a GPU). */
FUSEC_API fusec_status fusec_bench_copy(fusec_module *m, size_t bytes, int reps, double *median_ms);

/* ---- the kernel cache ------------------------------------------------------------------ */

/* What the on-disk cache holds. `dir` NULL: $FUSEC_CACHE_DIR, $XDG_CACHE_HOME/fusec or
 * ~/.cache/fusec. A missing directory is an empty cache. */
typedef struct fusec_cache_info {
    char dir[4096];
    uint64_t entries;     /* compiled binaries */
    uint64_t entry_bytes; /* their size */
    uint64_t total_bytes; /* every file the cache owns (entries, indexes, locks) */
    uint64_t max_bytes;   /* the bound: $FUSEC_CACHE_MAX_MB, least recently used evicted */
} fusec_cache_info;

FUSEC_API fusec_status fusec_cache_stats(const char *dir, fusec_cache_info *out);
/* Removes the cache's own files from dir (nothing else); *removed (may be NULL) counts them.
 * Safe while other processes use the cache: they rebuild what they miss. */
FUSEC_API fusec_status fusec_cache_clear(const char *dir, uint64_t *removed);

/* Frees memory the library handed out (fusec_module_emit). NULL is accepted. */
FUSEC_API void fusec_free(void *p);

#ifdef __cplusplus
}
#endif

#endif
