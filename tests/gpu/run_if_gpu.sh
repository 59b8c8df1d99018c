#!/usr/bin/env bash
# tests/gpu/run_if_gpu.sh CMD...: runs CMD where fusec finds a GPU, else exits 77 (skipped).
# The GPU suite's tests that are not C programs (which probe the driver themselves) use it.
set -u
msg=$("$FUSEC" run "$FUSEC_SRC/examples/gelu.fuse" -f gelu --target=cuda --in x=/nonexistent.npy 2>&1)
if [[ $msg == *"no CUDA driver or device"* || $msg == *"reports no device"* ]]; then
    echo "no GPU here: skipping"
    exit 77
fi
exec "$@"
