/* tests/emu/emu_run.h: running a host-built kernel over a grid (emu_run.c). */
#ifndef FUSEC_TESTS_EMU_RUN_H
#define FUSEC_TESTS_EMU_RUN_H

#include <stddef.h>

#include "tests/emu/emu_abi.h"

/* what kernel objects are bound to (fx_emu_bind) */
const emu_api *emu_get_api(void);

/* Runs kernel fn (its name for messages) over gx blocks of bx threads (one dimension) with
 * cuLaunchKernel's args; 0, or -1 with a message in err. */
int emu_launch(const char *kernel, emu_kernel_fn fn, unsigned gx, unsigned bx, void **args,
               char *err, size_t errlen);

#endif
