/* tests/rt/test_rt_standalone.c: a program linked with libfusec_rt alone (and -lpthread -lm
 * -ldl), using each of its parts as a runtime without the compiler would: the thread pool,
 * the CPU table and host detection, the ELF loader on a relocatable object (argv[1]), host
 * memory, DLPack, the clock, a CUDA launch description made concrete, and the CUDA driver,
 * which without a GPU says so. standalone.sh
 * then checks that the program holds nothing of the compiler. Exit 0, or 1 naming what failed. */
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "runtime/host_memory.h"
#include "runtime/clock.h"
#include "runtime/cpu/cpu_elf.h"
#include "runtime/cpu/cpu_target.h"
#include "runtime/cpu/threadpool.h"
#include "runtime/cuda/cuda_driver.h"
#include "runtime/cuda/cuda_resolve.h"
#include "runtime/dlpack.h"
#include "check.h"

#define PARTS 64
typedef struct sums {
    const int64_t *v;
    int parts; /* min(PARTS, the pool's threads): rt_pool_run's */
    int64_t part[PARTS];
    int seen[PARTS];
} sums;

static void sum_part(void *ctx, int64_t begin, int64_t end, int worker) {
    (void)worker;
    sums *s = ctx;
    int64_t t = 0;
    for (int64_t i = begin; i < end; i++)
        t += s->v[i];
    /* parts are contiguous and disjoint: the first element names the part */
    for (int p = 0; p < s->parts; p++) {
        int64_t b, e;
        rt_pool_part(100003, s->parts, p, &b, &e);
        if (b == begin && e == end) {
            s->part[p] = t;
            s->seen[p]++;
        }
    }
}

static void pool(void) {
    int64_t *v = malloc(100003 * sizeof *v);
    int64_t want = 0;
    for (int64_t i = 0; i < 100003; i++)
        want += v[i] = (i * 7919) % 1009 - 500;
    sums s;
    memset(&s, 0, sizeof s);
    s.v = v;
    CHECK(rt_pool_size() >= 1);
    s.parts = rt_pool_size() < PARTS ? rt_pool_size() : PARTS;
    rt_pool_run(100003, PARTS, sum_part, &s);
    int64_t got = 0;
    for (int p = 0; p < s.parts; p++) {
        CHECK(s.seen[p] == 1);
        got += s.part[p];
    }
    CHECK(got == want);
    free(v);
}

static void cpu_table(void) {
    const rt_cpu_target *t = NULL;
    char err[256];
    CHECK(rt_cpu_target_resolve("x86-64-v3", &t, err, sizeof err) == 0 && t);
    CHECK(rt_cpu_target_resolve("no-such-cpu", &t, err, sizeof err) != 0 && strstr(err, "x86-64"));
    CHECK(rt_cpu_host_id() && rt_cpu_host_vector_bytes() >= 16);
}

static void elf(const char *path) {
    FILE *f = fopen(path, "rb");
    CHECK(f != NULL);
    if (!f) return;
    static char obj[1 << 16];
    size_t n = fread(obj, 1, sizeof obj, f);
    fclose(f);
    if (!rt_elf_supported()) return;
    char err[256] = "";
    rt_elf *e = rt_elf_load(obj, n, err, sizeof err);
    CHECK(e != NULL);
    if (!e) {
        fprintf(stderr, "rt_elf_load: %s\n", err);
        return;
    }
    void *addr = rt_elf_lookup(e, "fusec_rt_probe_axpy");
    int (*axpy)(int, int, int);
    memcpy(&axpy, &addr, sizeof axpy); /* an object pointer to a function pointer, as dlsym's */
    CHECK(addr && axpy(3, 5, 7) == 22);
    CHECK(rt_elf_lookup(e, "no_such_symbol") == NULL);
    rt_elf_free(e);
    /* garbage is refused with a reason, not loaded */
    memset(obj, 0x5a, 256);
    err[0] = 0;
    CHECK(rt_elf_load(obj, 256, err, sizeof err) == NULL && err[0]);
}

static void memory_dlpack_clock(void) {
    char err[256];
    void *p = NULL;
    CHECK(rt_host_mem_alloc(-1, 1000, &p, err, sizeof err) == FUSEC_OK && p &&
          (uintptr_t)p % 64 == 0);
    float src[6] = {1, 2, 3, 4, 5, 6};
    CHECK(rt_host_mem_copy(p, src, sizeof src, 1, err, sizeof err) == FUSEC_OK &&
          ((float *)p)[5] == 6);
    int64_t shape[2] = {2, 3};
    rt_dl_tensor dl = {p, {RT_DL_CPU, 0}, 2, {RT_DL_FLOAT, 32, 1}, shape, NULL, 0};
    fusec_tensor t;
    CHECK(rt_dlpack_read(&dl, 1, &t, err, sizeof err) == FUSEC_OK && t.rank == 2 &&
          t.dtype == FUSEC_F32 && t.shape[1] == 3);
    dl.dtype.bits = 24; /* no such float */
    CHECK(rt_dlpack_read(&dl, 1, &t, err, sizeof err) != FUSEC_OK);
    CHECK(rt_host_mem_free(p, err, sizeof err) == FUSEC_OK);
    double a = rt_now_ms(), b = rt_now_ms();
    CHECK(b >= a);
    double ts[3] = {3, 1, 2};
    CHECK(rt_median(ts, 3) == 2);
}

/* A launch description as the CUDA generator writes one (a grid-stride kernel over N
 * elements, 4 a thread, and N as an argument), resolved for two sizes; N = 0 fails its check. */
static void cuda_launch_resolve(void) {
    const cuda_size n = {.coeff = 1, .nsyms = 1, .syms = {0}};
    const cuda_grid grid = {
        .kind = CUDA_GRID_STRIDE, .work = n, .per_thread = 4, .block = 256, .blocks_per_sm = 8};
    const cuda_variant var = {.name = "k0", .nparts = 1, .parts = &grid};
    const cuda_arg args[2] = {{.kind = CUDA_ARG_PARAM, .index = 0, .name = "x"},
                              {.kind = CUDA_ARG_SIZE, .size = n, .name = "n"}};
    const cuda_launch l = {
        .what = "pointwise", .nvariants = 1, .variants = &var, .nargs = 2, .args = args};
    const cuda_check chk = {.extent = n, .message = "max over an empty axis"};
    const cuda_func f = {.name = "f",
                         .nparams = 1,
                         .nresults = 1,
                         .nsyms = 1,
                         .nlaunches = 1,
                         .launches = &l,
                         .nchecks = 1,
                         .checks = &chk};
    CHECK(rt_cuda_func_nargs(&f) == 2);
    rt_cuda_config c;
    int64_t v[2], syms[1] = {100000};
    char err[128] = "";
    CHECK(rt_cuda_resolve(&f, syms, NULL, NULL, 132, &c, v, err, sizeof err) == 0);
    CHECK(!c.skip && c.grid == 98 && c.block == 256 && v[1] == 100000 && !strcmp(c.name, "k0"));
    syms[0] = 1 << 30; /* capped at 8 blocks an SM */
    CHECK(rt_cuda_resolve(&f, syms, NULL, NULL, 132, &c, v, err, sizeof err) == 0 &&
          c.grid == 132 * 8);
    syms[0] = 0;
    CHECK(rt_cuda_resolve(&f, syms, NULL, NULL, 132, &c, v, err, sizeof err) == -1 &&
          !strcmp(err, "max over an empty axis"));
}

static void cuda(void) {
    char why[512] = "";
    rt_cuda_device d;
    if (!rt_cuda_probe(&d, why, sizeof why))
        CHECK(why[0]); /* no GPU (or no driver): a reason, not a crash */
    else
        CHECK(d.count >= 1 && d.sm_count >= 1);
}

int main(int argc, char **argv) {
    if (argc != 2) {
        fprintf(stderr, "usage: test_rt_standalone ELF_PROBE.o\n");
        return 2;
    }
    pool();
    cpu_table();
    elf(argv[1]);
    memory_dlpack_clock();
    cuda_launch_resolve();
    cuda();
    return check_exit(
        "libfusec_rt (pool, CPU table, ELF loader, memory, DLPack, clock, CUDA probe)");
}
