#!/usr/bin/env bash
# tests/gpu/check_dry.sh: the one-call GPU check (scripts/gpu-check.sh) in a cut-down dry run
# against the emulated driver and NVRTC (ctest gpu_check.dry, label emu), so that the script
# a GPU session depends on cannot rot between the sessions that have a GPU. It bundles this
# build tree as `make gpu-bundle` bundles its own (scripts/gpu-bundle.sh), runs a few steps at
# their smallest sizes (the driver's start in facts.txt, a C test, a library built ahead of
# time, the test programs of one file, one random program, two benchmarks, a program's start
# in new processes), and checks
# the shape of what a GPU run hands back: five files, a summary line for every step of the
# script's list (the others "not chosen"), the totals, the benchmarks' JSON lines, the logs'
# tarball. The full dry run (every step; minutes) is FUSEC_GPU_DRY=1 by hand: DEVELOPERS.md.
# Runs with the emulated CUDA tests' environment (FUSEC_CUDA_DRIVER, FUSEC_NVRTC_PATH, ...).
set -u
: "${FUSEC:?}" "${FUSEC_SRC:?}" "${FUSEC_BUILD:?}" "${FUSEC_CUDA_DRIVER:?}"
# shellcheck source=tests/lib.sh
source "$FUSEC_SRC/tests/lib.sh"
script=$FUSEC_SRC/scripts/gpu-check.sh

# the CUDA library built ahead of time that make gpu-bundle adds, for the emulated GPU
mkdir "$tmp/aot"
"$FUSEC" --emit=lib --target=cuda --arch=sm_90 -o "$tmp/aot/kernels" "$FUSEC_SRC/examples/gelu.fuse" \
    "$FUSEC_SRC/examples/softmax.fuse" "$FUSEC_SRC/examples/layernorm.fuse" >"$tmp/aot.log" 2>&1 &&
    "${FUSEC_TEST_CC:-cc}" -std=c11 -O2 -DKERNELS_CUDA "$FUSEC_SRC/examples/aot/main.c" \
        -I"$tmp/aot" -L"$tmp/aot" -lkernels -lpthread -lm -ldl -o "$tmp/aot/aot_demo_cuda" \
        >>"$tmp/aot.log" 2>&1
check "a CUDA library and examples/aot against it: $(cat "$tmp/aot.log")" test $? -eq 0
AOT_DEMO=$tmp/aot/aot_demo_cuda bash "$FUSEC_SRC/scripts/gpu-bundle.sh" "$FUSEC_BUILD" \
    "$tmp/bundle" >"$tmp/bundle.log" 2>&1
rc=$?
check "gpu-bundle.sh bundles the build (exit $rc): $(cat "$tmp/bundle.log")" test $rc -eq 0
chosen="facts api aot programs random bench start"
mkdir "$tmp/tmpdir"
TMPDIR=$tmp/tmpdir FUSEC_GPU_DRY=1 FUSEC_GPU_STEPS="$chosen" FUSEC_TEST_FILES=gelu.fuse FUSEC_RANDOM_PROGRAMS=1 \
    FUSEC_GPU_BENCH_MAX=2 bash "$script" "$tmp/bundle" "$tmp/out" >"$tmp/log" 2>&1
rc=$?
check "gpu-check.sh exits 0 (exit $rc): $(tail -30 "$tmp/log")" test $rc -eq 0

files=$(cd "$tmp/out" && ls | tr '\n' ' ')
check "five files in OUT (at most six): $files" \
    test "$files" = "bench.jsonl facts.txt logs.tgz peers.json summary.txt "
sum=$tmp/out/summary.txt
check "the summary starts with its header: $(head -1 "$sum")" \
    grep -q '^# fusec gpu-check: commit: .*, dry run (emulated CUDA), ' <(head -1 "$sum")
# every step of the script's list once, in a line of its own
steps=$(sed -n '/^STEPS=(/,/)/p' "$script" | tr -d '()\n' | sed 's/^STEPS=//')
nsteps=$(wc -w <<<"$steps")
check "the script lists its steps ($nsteps)" test "$nsteps" -ge 20
for s in $steps; do
    n=$(grep -c "^$s " "$sum")
    check "step $s has one line in the summary (it has $n)" test "$n" -eq 1
    if [[ " $chosen " == *" $s "* ]]; then
        check "step $s passed: $(grep "^$s " "$sum")" grep -qE "^$s +passed " "$sum"
    else
        check "step $s is not chosen: $(grep "^$s " "$sum")" grep -qE "^$s +not chosen " "$sum"
    fi
done
want="passed, 0 failed, 0 cut off, 0 not started for lack of time, 0 skipped"
check "the totals come last: $(tail -1 "$sum")" \
    grep -qE "^total [0-9]+s: $(wc -w <<<"$chosen") $want, $((nsteps - $(wc -w <<<"$chosen"))) not chosen$" \
    <(tail -1 "$sum")
check "facts.txt times the driver's start: $(cat "$tmp/out/facts.txt")" \
    grep -q 'time: cuda start (once a process): dlopen .*cuInit' "$tmp/out/facts.txt"
check "facts.txt times the module's load apart" \
    grep -q 'loading the kernels .*cuModuleLoadData' "$tmp/out/facts.txt"
check "bench.jsonl: two benchmarks with their dims, ten starts with their steps, five of examples/aot" \
    python3 - "$tmp/out/bench.jsonl" <<'EOF'
import json, sys
rows = [json.loads(l) for l in open(sys.argv[1])]
bench = [r for r in rows if "median_ms" in r]
starts = [r for r in rows if r.get("kind") == "process start"]
aot = [r for r in starts if r["what"].startswith("aot_demo_cuda")]
starts = [r for r in starts if r not in aot]
assert len(bench) == 2 and all(r["args"].startswith("--dim N=") for r in bench), bench
assert {r["function"] for r in bench} == {"gelu", "gelu_f16"}, bench
assert len(starts) == 10, starts
keys = ("process_ms", "dlopen_ms", "cuinit_ms", "context_ms", "module_ms")
assert all(r["exit"] == 0 and all(k in r for k in keys) for r in starts), starts
assert len(aot) == 5 and all(r["exit"] == 0 and r["process_ms"] > 0 for r in aot), aot
assert len(rows) == 17, rows
EOF
check "the logs' tarball holds each chosen step's log" bash -c '
    t=$(tar tzf "$1"); shift
    for s in "$@"; do [ "$s" = facts ] || grep -qx "logs/$s.log" <<<"$t" || exit 1; done' _ \
    "$tmp/out/logs.tgz" $chosen
check "nothing is left in TMPDIR: $(ls "$tmp/tmpdir")" test -z "$(ls "$tmp/tmpdir")"
echo "$pass passed, $fail failed"
[ "$fail" -eq 0 ]
