#!/usr/bin/env bash
# tests/gpu/aot.sh DEMO: a library built ahead of time on the GPU (issue 31). DEMO is
# examples/aot/main.c built with -DKERNELS_CUDA against the CUDA library `make gpu-bundle`
# writes (GELU, softmax, layernorm for sm_90 and compute_90) and bundled as
# bin/aot_demo_cuda: it must run, name the code it picked, and give `fusec run
# --target=cuda`'s results bit for bit. Exits 77 (skipped) when the bundle has no DEMO.
set -u
demo=$1
[ -x "$demo" ] || { echo "no $demo in the bundle (make gpu-bundle builds it): skipping"; exit 77; }
: "${FUSEC:?}" "${FUSEC_SRC:?}"
dir=$(mktemp -d)
trap 'rm -rf "$dir"' EXIT
"$demo" "$dir" || { echo "FAIL: $demo"; exit 1; }
fail=0
for fn in gelu softmax layernorm; do
    ins=(--in "x=$dir/${fn}_x.npy")
    [ $fn = layernorm ] && ins+=(--in "w=$dir/${fn}_w.npy" --in "b=$dir/${fn}_b.npy")
    if ! "$FUSEC" run "$FUSEC_SRC/examples/$fn.fuse" -f $fn --target=cuda "${ins[@]}" \
        --out "$dir/${fn}_ref.npy"; then
        echo "FAIL: fusec run --target=cuda $fn"
        fail=1
        continue
    fi
    python3 - "$dir/${fn}_y.npy" "$dir/${fn}_ref.npy" <<'PY' || { echo "FAIL: $fn differs"; fail=1; }
import sys
import numpy as np
a, b = (np.load(p).view(np.uint32) for p in sys.argv[1:])
n = int((a != b).sum()) if a.shape == b.shape else -1
print(f"{sys.argv[1].rsplit('/', 1)[-1]}: {n} of {a.size} elements differ from fusec run's")
sys.exit(n != 0)
PY
done
[ $fail = 0 ] && echo "aot: the library's results are fusec run --target=cuda's, bit for bit"
exit $fail
