/* tests/rt/elf_probe.c: a function built as a relocatable object, which
 * test_rt_standalone loads with libfusec_rt's ELF loader as it would a kernel. */
int fusec_rt_probe_axpy(int a, int x, int y);

int fusec_rt_probe_axpy(int a, int x, int y) {
    return a * x + y;
}
