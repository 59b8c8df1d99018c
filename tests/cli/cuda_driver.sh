#!/usr/bin/env bash
# tests/cli/cuda_driver.sh: what fusec says when the CUDA driver library does not load. The
# message names the library it tried and gives dlerror's reason; a library named by
# $FUSEC_CUDA_DRIVER (the tests' stand-in) that fails is an error of its own, never "no CUDA
# driver or device", which the tests read as "no GPU here" and skip on (a stand-in that stopped
# loading would have turned the emulated CUDA tests into silent skips). Needs no GPU and no
# NVRTC: every case fails before anything is built.
set -u
: "${FUSEC:?}" "${FUSEC_SRC:?}"
# shellcheck source=tests/lib.sh
source "$FUSEC_SRC/tests/lib.sh"
gelu="$FUSEC_SRC/examples/gelu.fuse"
# a path that does not exist: named, with dlerror's text, exit 3 (a driver or device error;
# the device is looked for before the inputs are read, so none is needed)
out=$(FUSEC_CUDA_DRIVER=/nonexistent/libcuda_stand_in.so "$FUSEC" run "$gelu" -f gelu \
    --target=cuda --in x=/nonexistent.npy 2>&1)
rc=$?
check "a FUSEC_CUDA_DRIVER that does not load exits 3 (exit $rc): $out" test $rc -eq 3
check "the message names FUSEC_CUDA_DRIVER's library: $out" \
    grep -q "FUSEC_CUDA_DRIVER (/nonexistent/libcuda_stand_in.so) could not be loaded" <<<"$out"
check "the message gives dlerror's reason: $out" grep -q "cannot open shared object file" <<<"$out"
check "it is not 'no CUDA driver or device' (a test would skip): $out" \
    bash -c '! grep -q "no CUDA driver or device" <<<"$1"' _ "$out"

# the same when building for the GPU's own architecture (no --arch): the build needs the device
out=$(FUSEC_CUDA_DRIVER=/nonexistent/libcuda_stand_in.so "$FUSEC" --target=cuda "$gelu" 2>&1)
rc=$?
check "building without --arch exits 3 (exit $rc): $out" test $rc -eq 3
check "building names the library: $out" grep -q "/nonexistent/libcuda_stand_in.so" <<<"$out"

# a library that loads but is no driver (fusec's own): "too old", naming it and the entry point
lib=$(dirname "$FUSEC")/libfusec.so
if [ -e "$lib" ]; then
    out=$(FUSEC_CUDA_DRIVER="$lib" "$FUSEC" --target=cuda "$gelu" 2>&1)
    rc=$?
    check "a library without the driver API exits 3 (exit $rc): $out" test $rc -eq 3
    check "it names the library and what it lacks: $out" \
        grep -q "the CUDA driver ($lib) is too old: it lacks cu" <<<"$out"
fi

# the real driver's name where this machine has none: the default message, with dlerror's text
out=$(env -u FUSEC_CUDA_DRIVER "$FUSEC" --target=cuda "$gelu" 2>&1)
if grep -q "libcuda.so.1 could not be loaded" <<<"$out"; then
    check "no driver: 'no CUDA driver or device was found': $out" \
        grep -q "no CUDA driver or device was found" <<<"$out"
    check "no driver: dlerror's reason follows the name: $out" \
        grep -q "libcuda.so.1 could not be loaded: .*libcuda.so.1" <<<"$out"
    check "no driver: the message says to pass --arch: $out" grep -q -- "--arch=sm_XX" <<<"$out"
fi
echo "$pass passed, $fail failed"
[ "$fail" -eq 0 ]
