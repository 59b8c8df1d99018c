#!/bin/bash
# tests/package/distributed.sh: examples/distributed/train.py under torchrun, 2 processes on
# the CPU (gloo, CUDA hidden): a data-parallel training step whose activation and optimizer
# step are fusec operators, checked by the example against the same training with PyTorch alone
# (every rank's weights within 2e-6 of PyTorch's). Skipped (77) without PyTorch's gloo backend.
set -u
PY=${PYTHON:-python3}
if ! "$PY" -c "import torch.distributed as d; assert d.is_available() and d.is_gloo_available()" \
    2>/dev/null; then
    echo "PyTorch with torch.distributed (gloo) is not installed: skipping"
    exit 77
fi
run() {
    out=$(CUDA_VISIBLE_DEVICES= OMP_NUM_THREADS=1 "$PY" -m torch.distributed.run --standalone \
        --nproc-per-node=2 examples/distributed/train.py --steps 5 2>&1)
    rc=$?
    printf '%s\n' "$out" | grep -v '^W[0-9]'
}
run
# gloo aborts a rank as the group is torn down now and then ("terminate called without an active
# exception"), the example's barrier before it notwithstanding, more often on a loaded machine
# (once in `make test`'s parallel run, 2026-11-28; the verdict, reduced over the ranks, had been
# printed "same"): that abort, after the verdict, is run again once
if [ $rc -ne 0 ] && grep -q "terminate called without an active exception" <<<"$out" &&
    grep -q ": same" <<<"$out"; then
    echo "distributed.sh: gloo aborted a rank at teardown after the verdict: once more"
    run
fi
# the example's exit status is the verdict (every rank's weights against PyTorch's, reduced
# over the ranks); its line is not grepped: the two processes' output may interleave
if [ $rc -ne 0 ]; then
    echo "distributed.sh: FAILED (torchrun exit $rc)"
    exit 1
fi
echo "distributed.sh: ok"
