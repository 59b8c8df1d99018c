#!/usr/bin/env bash
# tests/gpu/ab_dry.sh: scripts/gpu-ab.sh (two bundles timed side by side on a GPU) in a dry run
# against the emulated driver and NVRTC (ctest gpu_ab.dry, label emu), so that the script a GPU
# session spends its minutes on has run before it gets there: this build tree bundled twice
# (as A and as B), every workload at about 2^12 elements (two of the rows' six shapes), one
# round; ab.log must hold a result of both bundles for every workload, the medians side by
# side, and no failure. Runs with the emulated CUDA tests' environment (FUSEC_CUDA_DRIVER, ...).
set -u
: "${FUSEC_SRC:?}" "${FUSEC_BUILD:?}" "${FUSEC_CUDA_DRIVER:?}"
# shellcheck source=tests/lib.sh
source "$FUSEC_SRC/tests/lib.sh"
bash "$FUSEC_SRC/scripts/gpu-bundle.sh" "$FUSEC_BUILD" "$tmp/a" >"$tmp/bundle.log" 2>&1
rc=$?
check "gpu-bundle.sh bundles the build (exit $rc): $(tail -3 "$tmp/bundle.log")" test $rc -eq 0
ln -s a "$tmp/b" # the same bundle under a second name
mkdir "$tmp/tmpdir"
TMPDIR=$tmp/tmpdir FUSEC_GPU_DRY=1 timeout 280 bash "$FUSEC_SRC/scripts/gpu-ab.sh" "$tmp/a" "$tmp/b" \
    "$tmp/out"
rc=$?
log=$tmp/out/ab.log
check "gpu-ab.sh exits 0 (exit $rc): $(tail -20 "$log" 2>/dev/null)" test $rc -eq 0
check "no workload failed: $(grep FAILED "$log" | head -3)" bash -c "! grep -q FAILED '$log'"
# one bench line of each bundle for every workload of the round (the rows' two functions over
# a dry run's two shapes, then five more), and a median line for each
n=$((2 * 2 + 5))
for v in a b; do
    got=$(grep -c "^$v r1 " "$log")
    check "bundle $v timed every workload ($got of $n)" test "$got" -eq "$n"
done
# (workloads whose cut shapes coincide share a median)
k=$(python3 -c 'import json, sys; print(len({json.loads(l)["args"] for l in open(sys.argv[1])}))' \
    "$tmp/out/ab.jsonl")
m=$(sed -n '/^== medians/,/^== done/p' "$log" | grep -c 'a: .* ms .*b: .* ms')
check "the medians side by side for every workload ($m of $k)" test "$m" -eq "$k" -a "$k" -ge 7
check "ab.jsonl holds a JSON line a run ($(wc -l <"$tmp/out/ab.jsonl") of $((2 * n)))" \
    test "$(wc -l <"$tmp/out/ab.jsonl")" -eq $((2 * n))
echo "$pass passed, $fail failed"
[ "$fail" -eq 0 ]
