#!/usr/bin/env bash
# tests/gpu/sanitizer.sh RUNTIME_TEST EMBED: the GPU suite's programs under compute-sanitizer,
# memcheck (out-of-bounds and misaligned accesses, leaks of device memory) and racecheck
# (shared-memory hazards in the reduction kernels), plus `fusec run` of every example.
set -u
cs=$(command -v compute-sanitizer || echo /usr/local/cuda/bin/compute-sanitizer)
if [[ ! -x $cs ]]; then
    echo "compute-sanitizer not found: skipping"
    exit 77
fi
tmp=$(mktemp -d)
trap 'rm -rf "$tmp"' EXIT
fail=0
check() { # TOOL CMD...
    local tool=$1
    shift
    if ! "$cs" --tool "$tool" --error-exitcode 99 --leak-check full "$@" >"$tmp/log" 2>&1; then
        echo "FAIL: compute-sanitizer --tool $tool $*"
        tail -40 "$tmp/log"
        fail=1
    else
        echo "ok: $tool $(basename "$1") ${*:2}"
    fi
}
export FUSEC_GPU_TEST_QUICK=1
python3 - "$tmp" <<'PY'
import sys, numpy as np
rng = np.random.default_rng(7)
np.save(sys.argv[1] + "/x1.npy", rng.standard_normal(100003).astype(np.float32))
np.save(sys.argv[1] + "/x2.npy", rng.standard_normal((37, 1031)).astype(np.float32))
np.save(sys.argv[1] + "/b.npy", rng.standard_normal(1031).astype(np.float32))
np.save(sys.argv[1] + "/w.npy", rng.standard_normal(1031).astype(np.float32))
PY
for tool in memcheck racecheck; do
    check "$tool" "$1"
    check "$tool" "$2" "$FUSEC_SRC/examples/gelu.fuse"
    for flags in "" "--no-fuse"; do
        ex=$FUSEC_SRC/examples
        # shellcheck disable=SC2086
        check "$tool" "$FUSEC" run $flags --target=cuda "$ex/gelu.fuse" -f gelu --in "x=$tmp/x1.npy" --out "$tmp/o.npy"
        # shellcheck disable=SC2086
        check "$tool" "$FUSEC" run $flags --target=cuda "$ex/softmax.fuse" -f softmax --in "x=$tmp/x2.npy" --out "$tmp/o.npy"
        # shellcheck disable=SC2086
        check "$tool" "$FUSEC" run $flags --target=cuda "$ex/layernorm.fuse" -f layernorm --in "x=$tmp/x2.npy" --in "w=$tmp/w.npy" --in "b=$tmp/b.npy" --out "$tmp/o.npy"
    done
done
exit $fail
