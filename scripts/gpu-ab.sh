#!/usr/bin/env bash
# scripts/gpu-ab.sh A B OUT: two bundles (scripts/gpu-bundle.sh) timed side by side on one GPU,
# interleaved, for a change whose cost only a GPU shows: the reductions (rows of 64 to 2^20
# elements, columns, a full sum and max: tests/programs/fusion_models.fuse stats) and GELU as
# the copy's yardstick. Each line of OUT/ab.jsonl is one `fusec bench --format json` with the
# bundle's name and the round; OUT/ab.log the medians side by side. First made for issue 30
# (A: f8f7120, the CUDA reductions before the plan's order; B: after), but any two bundles do:
#   A: a worktree of the other commit built without LLVM, bundled (DEVELOPERS.md has the
#      commands) into .gpu/a;  B: make gpu-bundle && cp -r gpu-bundle .gpu/b  (.gpu/ is ignored)
#   device call: bash scripts/gpu-ab.sh .gpu/a .gpu/b "$OUT"   (carry [".gpu"], about 4 minutes)
#   FUSEC_GPU_DRY=1: a dry run against the emulated driver (its variables set, as for ctest's
#      emu tests): every shape cut to about 2^12 elements, two of the six rows' shapes, one round (ctest
#      gpu_ab.dry).
set -u
A=${1:?bundle A} B=${2:?bundle B} OUT=${3:?output directory}
DRY=${FUSEC_GPU_DRY:-0}
PRE=(env) # a dry run's fusec: the emulated kernels' ASan run-time library preloaded
[[ $DRY == 1 && -n ${FUSEC_TEST_PRELOAD:-} ]] && PRE=(env "LD_PRELOAD=$FUSEC_TEST_PRELOAD")
mkdir -p "$OUT"
exec >"$OUT/ab.log" 2>&1
J=$OUT/ab.jsonl
: >"$J"
T0=$SECONDS
nvidia-smi --query-gpu=name,driver_version --format=csv,noheader 2>/dev/null
for v in "$A" "$B"; do head -3 "$v/BUNDLE.txt"; done
# the device held initialized, as gpu-check.sh does (a context per process otherwise)
[[ $DRY == 1 ]] || python3 - <<'PY' &
import ctypes, time
cu = ctypes.CDLL("libcuda.so.1"); d = ctypes.c_int(); c = ctypes.c_void_p()
cu.cuInit(0); cu.cuDeviceGet(ctypes.byref(d), 0); cu.cuDevicePrimaryCtxRetain(ctypes.byref(c), d)
time.sleep(900)
PY
HOLD=$!
[[ $DRY == 1 ]] && HOLD=
trap '[[ -n $HOLD ]] && kill $HOLD 2>/dev/null' EXIT
b() { # BUNDLE ROUND FILE FN ARGS... (FILE from the bundle's src/)
    local v=$1 r=$2 file=$3 fn=$4 out name
    shift 4
    name=$(basename "$v")
    [[ $DRY == 1 ]] && set -- $(dry_args "$@")
    # one kernel cache for both: its keys hold the generated source, so the bundles share
    # only what they generate alike (a dry run's two copies of one tree build each kernel once);
    # a bundle whose fusec has --no-cold-compile uses it (no NVRTC build a call without the cache)
    local nocold=()
    "$v/bin/fusec" --help 2>&1 | grep -q -- --no-cold-compile && nocold=(--no-cold-compile)
    if out=$(FUSEC_CACHE_DIR=${TMPDIR:-/tmp}/cache-ab timeout 60 "${PRE[@]}" "$v/bin/fusec" bench \
        "$v/src/$file" -f "$fn" --target=cuda --format json ${nocold[@]+"${nocold[@]}"} "$@") &&
        [[ $out == '{'* ]]; then
        echo "{\"bundle\": \"$name\", \"round\": $r, \"args\": \"$fn $*\", ${out#\{}" >>"$J"
        echo "$name r$r $fn $*: $(python3 -c 'import json,sys; o=json.loads(sys.argv[1]); print(o["median_ms"], "ms", o["pct_of_copy"], "% of copy")' "$out")"
    else
        echo "FAILED: $name $fn $*"
    fi
}
dry_args() { # the arguments with the --dims shifted down alike to about 2^12 elements in all
    # (the shapes keep their form; rows at most 16), --reps 2
    python3 - "$@" <<'PY'
import math, sys
a = sys.argv[1:]
dims = [i + 1 for i, x in enumerate(a) if x == "--dim"]
vals = [int(a[i].split("=")[1]) for i in dims]
bits = math.log2(max(1, math.prod(vals)))
s = max(0, math.ceil((bits - 12) / max(1, len(dims))))
for k, (i, v) in enumerate(zip(dims, vals)):
    # and at most 16 rows: the emulator runs a CUDA thread as a fiber, and rows take 32 each
    v = min(v >> s, 16) if k == 0 and len(dims) > 1 else v >> s
    a[i] = f"{a[i].split('=')[0]}={max(1, v)}"
if "--reps" in a:
    a[a.index("--reps") + 1] = "2"
print(" ".join(a))
PY
}
echo "== correctness of B: one answer against the CPU's results it carries (t=$((SECONDS - T0)))"
if [[ -d $B/one_answer ]]; then
    FUSEC=$B/bin/fusec FUSEC_SRC=$B/src FUSEC_TEST_TARGET=cuda FUSEC_ONE_ANSWER_CPU=$B/one_answer \
        FUSEC_CACHE_DIR=/tmp/cache-oa timeout 120 python3 "$B/src/tests/cli_py/test_one_answer.py" 2>&1 |
        tail -5
fi
# the rows' shapes (a dry run: the shortest and the longest rows only)
SHAPES=("65536 64" "16384 256" "32768 1024" "8192 4096" "2048 16384" "64 1048576")
[[ $DRY == 1 ]] && SHAPES=("65536 64" "64 1048576")
echo "== side by side (t=$((SECONDS - T0)))"
for r in 1 2 3; do
    for v in "$A" "$B"; do
        for rc in "${SHAPES[@]}"; do
            set -- $rc
            b "$v" $r bench/programs/rows.fuse softmax --dim R=$1 --dim C=$2 --reps 20
            b "$v" $r bench/programs/rows.fuse layernorm --dim R=$1 --dim C=$2 --reps 20
        done
        b "$v" $r bench/programs/cols.fuse colsum --dim R=16384 --dim C=4096 --reps 20
        b "$v" $r bench/programs/cols.fuse colsum --dim R=1048576 --dim C=32 --reps 20
        b "$v" $r tests/programs/fusion_models.fuse stats --dim N=67108864 --reps 20
        b "$v" $r tests/programs/fusion_models.fuse stats --dim N=1048576 --reps 50
        b "$v" $r bench/programs/gelu.fuse gelu --dim N=67108864 --reps 20
    done
    ((SECONDS - T0 > 420)) && break
    [[ $DRY == 1 ]] && break
done
echo "== medians (t=$((SECONDS - T0)))"
python3 - "$J" <<'PY'
import json, statistics, sys, collections
rows = [json.loads(l) for l in open(sys.argv[1])]
by = collections.defaultdict(lambda: collections.defaultdict(list))
for o in rows:
    by[o["args"]][o["bundle"]].append((o["median_ms"], o["pct_of_copy"]))
for args, d in by.items():
    cells = [f"{b}: {statistics.median(x[0] for x in v):.4f} ms {statistics.median(x[1] for x in v):.0f}%"
             for b, v in sorted(d.items())]
    print(f"{args:45s} " + "   ".join(cells))
PY
echo "== done (t=$((SECONDS - T0)))"
