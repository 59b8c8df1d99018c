/* tests/emu/emu_none.c: the emulator's entry points where the build has no Boost.Context for
 * its fibers (tests/emu/emu_run.c): the stand-in driver then refuses to run kernels. */
#include "tests/emu/emu_run.h"

#include <stdio.h>

const emu_api *emu_get_api(void) {
    return NULL;
}

int emu_launch(const char *kernel, emu_kernel_fn fn, unsigned gx, unsigned bx, void **args,
               char *err, size_t errlen) {
    (void)kernel, (void)fn, (void)gx, (void)bx, (void)args;
    snprintf(err, errlen, "no emulator: built without Boost.Context");
    return -1;
}
