#!/usr/bin/env bash
# scripts/gpu-check.sh BUNDLE OUT: the project's GPU check, in one call of a lent GPU machine.
#
# BUNDLE is what `make gpu-bundle` made (bin/: fusec, libfusec.so, the C tests, embed; src/:
# the programs, tests, Python package and benchmark scripts of the same commit). Run it from
# the checkout's root there: bash scripts/gpu-check.sh gpu-bundle "$OUT" (DEVELOPERS.md has
# the device tool's call). OUT gets five files, whatever happens:
#   summary.txt  a line for each step as it ends, so that a run cut off still says what
#                passed; the totals last
#   facts.txt    the device, driver, NVRTC, PyTorch, and one process's CUDA start timed step
#                by step (fusec -v: dlopen, cuInit, the context, cuModuleLoadData)
#   bench.jsonl  the benchmarks (fusec bench --format json, with their dims), a cached
#                program's start in new processes and examples/aot's against a library built
#                ahead of time, one JSON object a line
#   peers.json   PyTorch's times for the same workloads (bench/torch_peers.py)
#   logs.tgz     every step's log, ncu's reports, BUNDLE.txt
#
# Time: every step runs under its own limit, and every limit is cut to what is left before
# its part's end, so that the whole ends before DEADLINE (520 s; a device call has 600, and the
# transfers need the rest): about 6 minutes expected on an H100. The order: facts; NVRTC
# builds of every program, all cores at once (the cache is a temporary folder's); the C
# tests; the Python suites at quick sizes, several at once, each running its cases on several
# threads (FUSEC_TEST_JOBS); compute-sanitizer; the benchmarks, alone on the device; ncu on
# the benchmarks that missed their goal (issue 28), where ncu is. A process holds the device
# initialized throughout (a context of its own, so the many short processes do not each
# bring the driver up from nothing; it changes no setting of the card).
#
# FUSEC_GPU_DRY=1 runs the same steps against the emulated driver and NVRTC of a build tree
# here (tests/emu; FUSEC_EMU_BUILD, default build/), at sizes two cores finish in minutes:
# what the script does is tested without a GPU. FUSEC_GPU_STEPS="name ..." runs those steps
# only (the others are listed "not chosen"): `make test` runs a few that way (ctest
# gpu_check.dry). The tests' own knobs set by the caller (FUSEC_RANDOM_PROGRAMS,
# FUSEC_TEST_FILES, FUSEC_CACHE_DIR, ...) are kept; FUSEC_GPU_BENCH_MAX=N runs N benchmarks.
set -u

# ---- setup ------------------------------------------------------------------------------------

if [[ ${1:-} != --part ]]; then
    BUNDLE=$(cd "${1:?usage: gpu-check.sh BUNDLE OUT}" && pwd) || exit 2
    mkdir -p "${2:?usage: gpu-check.sh BUNDLE OUT}" && OUT=$(cd "$2" && pwd) || exit 2
    [[ -x $BUNDLE/bin/fusec && -d $BUNDLE/src ]] || {
        echo "gpu-check: $BUNDLE is not a bundle (make gpu-bundle)" >&2
        exit 2
    }
    W=$(mktemp -d "${TMPDIR:-/tmp}/fusec-gpu-check.XXXXXX")
    mkdir -p "$W/logs"
    # the parts below run as `bash $SELF --part NAME`, this very file, under a step's limit
    SELF=$(cd "$(dirname "$0")" && pwd)/$(basename "$0")
    export BUNDLE OUT W SELF L=$W/logs
    export S=$BUNDLE/src BIN=$BUNDLE/bin FUSEC=$BUNDLE/bin/fusec FUSEC_SRC=$BUNDLE/src
    export FUSEC_CACHE_DIR=${FUSEC_CACHE_DIR:-$W/cache} FUSEC_TEST_TARGET=cuda
    export PYTHONUNBUFFERED=1 PYTHONDONTWRITEBYTECODE=1 FUSEC_TEST_VERBOSE=1
    NPROC=$(nproc 2>/dev/null || echo 2)
    export DRY=${FUSEC_GPU_DRY:-0} NPROC
    ASAN_RT=
    if [[ $DRY == 1 ]]; then
        # the stand-in driver and NVRTC that ctest's emu tests use, and the AddressSanitizer
        # run-time library their kernels are built with where the C++ compiler has it (as
        # tests/CMakeLists.txt decides)
        emu=$(cd "${FUSEC_EMU_BUILD:-$(dirname "$0")/../build}" 2>/dev/null && pwd)/tests
        export FUSEC_CUDA_DRIVER=${FUSEC_CUDA_DRIVER:-$emu/libcuda_mock.so}
        export FUSEC_NVRTC_PATH=${FUSEC_NVRTC_PATH:-$emu/libnvrtc_emu.so} FUSEC_MOCK_SMS=1
        [[ -e $FUSEC_CUDA_DRIVER && -e $FUSEC_NVRTC_PATH ]] || {
            echo "gpu-check: no emulated CUDA in $emu (build the tree: make build)" >&2
            exit 2
        }
        if [[ -z ${FUSEC_TEST_PRELOAD+set} ]]; then
            for cxx in g++ c++ clang++; do
                command -v $cxx >/dev/null || continue
                a=$($cxx -print-file-name=libasan.so)
                [[ $a == /* && -e $a ]] && export FUSEC_TEST_PRELOAD=$a ASAN_OPTIONS=detect_leaks=0
                break
            done
        fi
        ASAN_RT=${FUSEC_TEST_PRELOAD:-}
    fi
    export ASAN_RT
fi
tool() { # NAME: the CUDA toolkit's program NAME, on the PATH or in /usr/local/cuda/bin
    command -v "$1" || echo "/usr/local/cuda/bin/$1"
}
# what runs a process that loads kernels (a C test, Python with the package, fusec itself): the
# emulated kernels' ASan run-time library preloaded in a dry run
dev() {
    if [[ -n $ASAN_RT ]]; then LD_PRELOAD=$ASAN_RT "$@"; else "$@"; fi
}
DEV=(env)
[[ -n $ASAN_RT ]] && DEV=(env "LD_PRELOAD=$ASAN_RT")

# ---- the parts that run under a step's time limit as `bash gpu-check.sh --part NAME` ----------

# What the device is, and one process's CUDA start timed step by step (facts.txt).
part_facts() {
    local s i
    head -3 "$BUNDLE/BUNDLE.txt"
    echo "machine: $(uname -srm), $NPROC cores, $(grep -m1 'model name' /proc/cpuinfo | cut -d: -f2)"
    if [[ $DRY == 1 ]]; then
        echo "dry run: driver $FUSEC_CUDA_DRIVER, NVRTC $FUSEC_NVRTC_PATH, preload ${ASAN_RT:-none}"
    fi
    nvidia-smi --query-gpu=name,driver_version,persistence_mode,memory.total,clocks.sm,clocks.max.sm \
        --format=csv 2>&1 | head -3
    echo "LD_LIBRARY_PATH=${LD_LIBRARY_PATH:-}"
    ldconfig -p 2>/dev/null | grep -E 'libnvrtc\.so|libcuda\.so' | head -4
    echo "NVRTC: $(env -u FUSEC_NVRTC_PATH timeout 60 "$BIN/test_nvrtc" 2>&1 | grep -m1 -E 'loaded|skipping')"
    echo "compute-sanitizer: $("$(tool compute-sanitizer)" --version 2>&1 | tail -1)"
    echo "ncu: $("$(tool ncu)" --version 2>&1 | tail -1)"
    timeout 60 python3 -c 'import numpy, torch
print("numpy", numpy.__version__, "torch", torch.__version__, "CUDA", torch.version.cuda,
      "available" if torch.cuda.is_available() else "not available")' 2>&1 | tail -1
    for i in 1 2 3; do # a process's start: the first builds (a miss), the others hit the cache
        s=$(date +%s%N)
        timeout 60 "${DEV[@]}" "$FUSEC" --target=cuda -v "$S/examples/gelu.fuse" 2>&1 |
            grep -E 'cuda start|module|loading|error'
        echo "process $i: $((($(date +%s%N) - s) / 1000000)) ms"
    done
}

# The device held initialized until killed: device 0's primary context, as fusec uses it.
# (exec: the step's kill reaches Python itself, which would outlive a shell killed instead)
part_holder() {
    exec python3 - <<'EOF'
import ctypes, os, time
cu = ctypes.CDLL(os.environ.get("FUSEC_CUDA_DRIVER") or "libcuda.so.1")
dev, ctx = ctypes.c_int(), ctypes.c_void_p()
ok = (cu.cuInit(0) == 0 and cu.cuDeviceGet(ctypes.byref(dev), 0) == 0
      and cu.cuDevicePrimaryCtxRetain(ctypes.byref(ctx), dev) == 0)
print("holding device 0" if ok else "could not initialize the device", flush=True)
time.sleep(900 if ok else 0)
EOF
}

# Every program's kernels, fused and --no-fuse, built NPROC at once into the cache, so that
# the tests' processes find them there (the cache is safe for it: one build of each).
part_prewarm() {
    printf '%s\n' "$S"/examples/*.fuse "$S"/tests/programs/*.fuse "$S"/bench/programs/*.fuse |
        xargs -P "$NPROC" -I@ sh -c '"$FUSEC" --target=cuda --emit=cubin "$1" -o /dev/null &&
            "$FUSEC" --target=cuda --emit=cubin --no-fuse "$1" -o /dev/null && echo "built $1"' _ @
}

# The benchmarks: one `fusec bench` each, its JSON line with the dims added, to bench.jsonl
# (FUSEC_GPU_BENCH_MAX=N: the first N only; each emulated one builds its program cold).
part_bench() {
    local G R C R2 C2 reps chain_reps fails=0 count=0
    if [[ $DRY == 1 ]]; then
        G=4096 R=16 C=64 R2=4 C2=256 reps=3 chain_reps=5
    else
        G=268435456 R=4096 C=4096 R2=1024 C2=16384 reps=20 chain_reps=200
    fi
    b() { # FILE FUNCTION ARGS...: one benchmark
        local file=$1 fn=$2 out
        shift 2
        count=$((count + 1))
        ((count > ${FUSEC_GPU_BENCH_MAX:-99})) && return
        echo "fusec bench $file -f $fn $*"
        # (--no-cold-compile: the prewarmed cache's module, not an NVRTC build each; COLD=1
        # times one, compile_cold_ms, as the first benchmark does)
        local nocold=(--no-cold-compile)
        [[ ${COLD:-} == 1 ]] && nocold=()
        if out=$(timeout 90 "${DEV[@]}" "$FUSEC" bench "$S/bench/programs/$file" -f "$fn" \
            --target=cuda --format json ${nocold[@]+"${nocold[@]}"} "$@") && [[ $out == '{'* ]]; then
            echo "{\"args\": \"${FUSEC_CUDA_ROW_LANES:+lanes=$FUSEC_CUDA_ROW_LANES }$*\", ${out#\{}" |
                tee -a "$OUT/bench.jsonl"
        else
            echo "FAILED: $file $fn $* (exit $?)"
            fails=$((fails + 1))
        fi
    }
    COLD=1 b gelu.fuse gelu --dim N=$G --reps $reps
    b gelu.fuse gelu_f16 --dim N=$G --reps $reps
    b gelu.fuse gelu --dim N=$G --no-fuse --reps $reps
    for f in bias_relu bias_relu_f16 bias_relu_bf16; do
        b bias_relu.fuse $f --dim B=$((G / C)) --dim C=$C --reps $reps
    done
    for f in softmax layernorm; do
        b rows.fuse $f --dim R=$((4 * R)) --dim C=$((C / 4)) --reps $reps
        b rows.fuse $f --dim R=$R --dim C=$C --reps $reps
        b rows.fuse $f --dim R=$R2 --dim C=$C2 --reps $reps
    done
    # the plan's order with a lane a thread (4x a row's threads, codegen/cuda/cuda_reduce.c),
    # beside the default's 4 lanes a thread (f32): issue 28's next measurement
    for f in softmax layernorm; do
        FUSEC_CUDA_ROW_LANES=1 b rows.fuse $f --dim R=$((4 * R)) --dim C=$((C / 4)) --reps $reps
        FUSEC_CUDA_ROW_LANES=1 b rows.fuse $f --dim R=$R --dim C=$C --reps $reps
    done
    b rows.fuse softmax --dim R=$R --dim C=$C --no-fuse --reps $reps
    b cols.fuse colsum --dim R=$((4 * R)) --dim C=$C --reps $reps
    for l in stream plan; do
        b chain20.fuse chain20 --no-fuse --dim N=$((G < 1048576 ? G : 1048576)) --launch=$l \
            --reps $chain_reps
    done
    echo "$(grep -c . "$OUT/bench.jsonl") results, $fails failed"
    ((fails == 0))
}

# A cached program's start in new processes, with the device held by another process: the
# whole process timed here, its steps by fusec -v; and the same for examples/aot against a CUDA
# library built ahead of time (issue 31: nothing compiled, nothing cached); a JSON line each to
# bench.jsonl.
part_start() {
    python3 - "$FUSEC" "$S/bench/programs/gelu.fuse" "$W/x.npy" "$OUT/bench.jsonl" \
        "$BIN/aot_demo_cuda" <<'EOF'
import json, os, re, subprocess, sys, time
import numpy as np
fusec, prog, x, out, demo = sys.argv[1:]
np.save(x, np.ones(1 << 20, np.float32))
env = dict(os.environ)
if os.environ.get("ASAN_RT"):  # a dry run's emulated kernels
    env["LD_PRELOAD"] = os.environ["ASAN_RT"]
cmds = {"fusec -v --target=cuda gelu.fuse (build: cached)": [fusec, "-v", "--target=cuda", prog],
        "fusec run -v gelu, 2^20 elements": [fusec, "run", "-v", "--target=cuda", prog, "-f",
                                             "gelu", "--in", "x=" + x, "--out", x + ".out.npy"]}
if os.access(demo, os.X_OK):  # GELU [100003], softmax [37, 1001], layernorm [129, 771], to .npy
    os.makedirs(x + ".aot", exist_ok=True)  # its results, in the check's work folder
    cmds["aot_demo_cuda (examples/aot, a library built ahead of time)"] = [demo, x + ".aot"]
num = r"([0-9.]+) ms"
fields = {"dlopen_ms": r"dlopen \S+ " + num, "cuinit_ms": r"cuInit " + num,
          "device_ms": r"device 0 " + num, "load_ms": r"loading the kernels " + num,
          "context_ms": r"context " + num, "pool_ms": r"memory pool " + num,
          "module_ms": r"cuModuleLoadData " + num, "functions_ms": r"functions " + num}
bad = 0
with open(out, "a") as f:
    for what, cmd in cmds.items():
        subprocess.run(cmd, capture_output=True, env=env)  # the caches warm
        for rep in range(5):
            t = time.perf_counter()
            p = subprocess.run(cmd, capture_output=True, text=True, env=env)
            ms = (time.perf_counter() - t) * 1e3
            r = {"kind": "process start", "what": what, "rep": rep, "process_ms": round(ms, 3),
                 "exit": p.returncode, "device_held": True}
            for k, pat in fields.items():
                m = re.search(pat, p.stderr)
                if m:
                    r[k] = float(m.group(1))
            bad += p.returncode != 0 or ("cuinit_ms" not in r and what.startswith("fusec"))
            print(json.dumps(r))
            f.write(json.dumps(r) + "\n")
print(f"{'FAILED' if bad else 'passed'}: {bad} of {5 * len(cmds)} starts failed or untimed")
sys.exit(1 if bad else 0)
EOF
}

# PyTorch's peers for the benchmarks' workloads (eager, fused op, torch.compile, copy_).
part_peers() {
    python3 -c 'import torch' 2>/dev/null || {
        echo "PyTorch is not installed: skipping"
        exit 77
    }
    local flags=(--reps 20)
    local sizes='G, R, C, R2, C2 = 1 << 28, 4096, 4096, 1024, 16384'
    if [[ $DRY == 1 ]]; then # no CUDA here: PyTorch on the CPU, to test the plumbing
        flags=(--reps 2 --warmup 1 --device cpu --no-compile)
        sizes='G, R, C, R2, C2 = 4096, 16, 64, 4, 256'
    fi
    python3 - "$W/peers-in.json" <<EOF
import json, sys
$sizes
w = [dict(kind="gelu", dtype=d, shape=[G]) for d in ("f32", "f16")]
w += [dict(kind="bias_relu", dtype=d, shape=[G // C, C]) for d in ("f32", "f16", "bf16")]
w += [dict(kind=k, dtype="f32", shape=s) for k in ("softmax", "layernorm")
      for s in ([4 * R, C // 4], [R, C], [R2, C2])]
w += [dict(kind="colsum", dtype="f32", shape=[4 * R, C])]
json.dump(w, open(sys.argv[1], "w"))
EOF
    python3 "$S/bench/torch_peers.py" "$W/peers-in.json" "${flags[@]}" >"$OUT/peers.json"
}

# ncu on one launch of each benchmark that missed its goal or trails PyTorch: rows of 16384
# (softmax at 64% of the copy, layernorm 80%), the column sum (57% before 2048 units), GELU f16
# (87%) and f32 (94%, torch.compile 100%); text reports into the logs.
part_ncu() {
    local ncu
    ncu=$(tool ncu)
    [[ -x $ncu ]] || {
        echo "ncu not found: skipping"
        exit 77
    }
    local n=0
    one() { # NAME LAUNCHES FILE FUNCTION ARGS...
        local name=$1 count=$2 file=$3 fn=$4
        shift 4
        timeout 90 "$ncu" --section SpeedOfLight --section Occupancy --section WarpStateStats \
            --section MemoryWorkloadAnalysis -k regex:fusec_ --launch-count "$count" \
            "$FUSEC" bench "$S/bench/programs/$file" -f "$fn" --target=cuda --reps 1 \
            --no-cold-compile "$@" \
            >"$L/ncu-$name.txt" 2>&1
        local rc=$?
        if grep -q ERR_NVGPUCTRPERM "$L/ncu-$name.txt"; then
            echo "ncu may not read the GPU's counters here (ERR_NVGPUCTRPERM): skipping"
            exit 77
        fi
        echo "ncu $name: exit $rc, $(grep -c 'Section:' "$L/ncu-$name.txt") sections"
        ((rc == 0)) && n=$((n + 1))
    }
    one softmax_16384 1 rows.fuse softmax --dim R=1024 --dim C=16384
    one layernorm_16384 1 rows.fuse layernorm --dim R=1024 --dim C=16384
    one colsum 2 cols.fuse colsum --dim R=16384 --dim C=4096
    one gelu_f16 1 gelu.fuse gelu_f16 --dim N=268435456
    one gelu_f32 1 gelu.fuse gelu --dim N=268435456
    echo "$n of 5 profiled"
    ((n == 5))
}

if [[ ${1:-} == --part ]]; then
    "part_$2"
    exit $?
fi

# ---- the steps ----------------------------------------------------------------------------------

# every step, each once in the summary whatever runs (tests/gpu/check_dry.sh reads this list)
STEPS=(facts prewarm grad_reductions api gpu_runtime inplace strides dlpack nvrtc embed aot
    python programs random grad rand argmax cli_views cuda_deep one_answer memcheck racecheck
    bench start peers ncu)
for s in ${FUSEC_GPU_STEPS:-}; do
    [[ " ${STEPS[*]} " == *" $s "* ]] || {
        echo "gpu-check: FUSEC_GPU_STEPS names '$s', which is no step: ${STEPS[*]}" >&2
        exit 2
    }
done
T0=$SECONDS
if [[ $DRY == 1 ]]; then
    DEADLINE=590 TESTS_END=470 SANITIZERS_END=480 BENCH_END=575 JOBS=1 PARALLEL=2 RANDOM_N=8
else
    DEADLINE=520 TESTS_END=360 SANITIZERS_END=400 BENCH_END=505 JOBS=4 PARALLEL=4 RANDOM_N=48
fi
END=$TESTS_END # the end of the part that runs now, in seconds from T0
: >"$OUT/summary.txt"
: >"$OUT/bench.jsonl"
echo "# fusec gpu-check: $(head -1 "$BUNDLE/BUNDLE.txt" 2>/dev/null), $([[ $DRY == 1 ]] &&
    echo "dry run (emulated CUDA)" || echo "GPU"), $(date -u '+%Y-%m-%d %H:%M UTC')" |
    tee -a "$OUT/summary.txt"

chosen() {
    [[ -z ${FUSEC_GPU_STEPS:-} || " $FUSEC_GPU_STEPS " == *" $1 "* ]]
}

line() { # NAME RESULT SECONDS NOTE: one line of the summary, written at once (steps end together)
    printf '%-16s %-15s %4ds  %s\n' "$1" "$2" "$3" "${4:0:100}" | tee -a "$OUT/summary.txt"
}

step() { # NAME LIMIT CMD...: CMD under LIMIT seconds (cut to END), its output in L/NAME.log
    local name=$1 limit=$2
    shift 2
    if ! chosen "$name"; then
        line "$name" "not chosen" 0 ""
        return 0
    fi
    local left=$((END - (SECONDS - T0)))
    if ((left < 5)); then
        line "$name" "NO TIME" 0 "the part's time ($END s) was spent before it"
        return 0
    fi
    ((limit > left)) && limit=$left
    local s=$SECONDS
    timeout -k 5 "$limit" "$@" >"$L/$name.log" 2>&1
    local rc=$? what note
    case $rc in
    0) what=passed ;;
    77) what=skipped ;;
    124 | 137) what="TIMEOUT(${limit}s)" ;;
    *) what="FAILED($rc)" ;;
    esac
    # the test's count, or where a run cut off had got to
    note=$(grep -E 'passed|FAIL|rror|skipping|gradients|results' "$L/$name.log" | tail -1)
    [[ $what == TIMEOUT* || -z $note ]] && note=$(grep -v '^\s*$' "$L/$name.log" | tail -1)
    line "$name" "$what" $((SECONDS - s)) "$note"
}

BG=()
running() {
    local n=0 p
    for p in ${BG[@]+"${BG[@]}"}; do kill -0 "$p" 2>/dev/null && n=$((n + 1)); done
    echo $n
}
bg_step() { # as step, in the background, PARALLEL at most at once
    while (($(running) >= PARALLEL)); do sleep 1; done
    step "$@" &
    BG+=($!)
}
wait_steps() {
    local p
    for p in ${BG[@]+"${BG[@]}"}; do wait "$p"; done
    BG=()
}

# facts: before the holder starts, so that the process start timed is a user's
s=$SECONDS
timeout -k 5 120 bash "$SELF" --part facts >"$OUT/facts.txt" 2>&1
if chosen facts; then
    line facts "$(grep -q 'cuda start' "$OUT/facts.txt" && echo passed || echo 'FAILED(no start)')" \
        $((SECONDS - s)) "$(grep -m1 'process 2' "$OUT/facts.txt")"
else
    line facts "not chosen" 0 ""
fi

bash "$SELF" --part holder >"$L/holder.log" 2>&1 &
HOLD=$!
trap 'kill $HOLD 2>/dev/null' EXIT

# 1. the kernels built, the C tests, the gradients of every reduction (one big module: its
# NVRTC run, a minute on an H100's host, goes on beside the prewarm)
step grad_reductions 240 "${DEV[@]}" "$BIN/test_grad_reductions" &
BG+=($!)
step prewarm 120 bash "$SELF" --part prewarm
QUICK=() # the runtime test's 1000 plan replays take 2 s on a GPU, minutes emulated
[[ $DRY == 1 ]] && QUICK=(FUSEC_GPU_TEST_QUICK=1)
for t in api gpu_runtime inplace strides dlpack; do
    step $t 90 "${DEV[@]}" ${QUICK[@]+"${QUICK[@]}"} "$BIN/test_$t"
done
step nvrtc 60 env -u FUSEC_NVRTC_PATH "$BIN/test_nvrtc"
if [[ $DRY == 1 ]]; then
    step embed 10 sh -c 'echo "embed: 1000 replays over 10^6 elements, emulated: too slow; skipping"
        exit 77'
else
    step embed 60 bash "$S/tests/gpu/embed.sh" "$BIN/embed"
fi
# a library built ahead of time (issue 31): examples/aot on the GPU, against fusec run's bits
step aot 60 "${DEV[@]}" bash "$S/tests/gpu/aot.sh" "$BIN/aot_demo_cuda"

# 2. the Python suites, several at once, the longest first (every test program, on twice the
# threads: on the H100's 16 cores it alone took 283 s on 4, the others done after 141 s)
J="FUSEC_TEST_JOBS=${FUSEC_TEST_JOBS:-$JOBS}"
bg_step programs 330 env FUSEC_CPU_TEST_QUICK=1 "FUSEC_TEST_JOBS=${FUSEC_TEST_JOBS:-$((2 * JOBS))}" \
    python3 "$S/tests/cli_py/test_cpu_backend.py"
bg_step random 240 env FUSEC_RANDOM_PROGRAMS="${FUSEC_RANDOM_PROGRAMS:-$RANDOM_N}" "$J" \
    python3 "$S/tests/cli_py/test_random_programs.py"
bg_step grad 240 env "$J" python3 "$S/tests/cli_py/test_grad.py"
bg_step python 150 "${DEV[@]}" PYTHONPATH="$S/python" FUSEC_LIBRARY="$BIN/libfusec.so" \
    python3 "$S/tests/package/test_package.py"
# (one_answer: the CPU target's results from the bundle where it has them, this build having
# no CPU target on a GPU machine)
[[ -d $BUNDLE/one_answer ]] && export FUSEC_ONE_ANSWER_CPU=$BUNDLE/one_answer
for t in rand argmax cli_views cuda_deep one_answer; do
    bg_step $t 180 env "$J" python3 "$S/tests/cli_py/test_$t.py"
done
wait_steps

# 3. compute-sanitizer on the runtime test (plans, two streams, softmax; a few replays)
END=$SANITIZERS_END
cs=$(tool compute-sanitizer)
for tool in memcheck racecheck; do
    if [[ -x $cs ]]; then
        leaks=() # (memcheck's option: device memory never freed)
        [[ $tool == memcheck ]] && leaks=(--leak-check full)
        step $tool 60 env FUSEC_GPU_TEST_QUICK=1 "$cs" --tool $tool ${leaks[@]+"${leaks[@]}"} \
            --error-exitcode 99 "$BIN/test_gpu_runtime"
    else
        step $tool 10 sh -c 'echo "compute-sanitizer not found: skipping"; exit 77'
    fi
done

# 4. the benchmarks, alone on the device but for the holder; then ncu with what is left
END=$BENCH_END
step bench 200 bash "$SELF" --part bench
step start 60 bash "$SELF" --part start
step peers 150 bash "$SELF" --part peers
END=$((DEADLINE - 10))
step ncu 150 bash "$SELF" --part ncu

kill $HOLD 2>/dev/null
cp "$BUNDLE/BUNDLE.txt" "$L/" 2>/dev/null
[[ -e $W/peers-in.json ]] && cp "$W/peers-in.json" "$L/"
tar czf "$OUT/logs.tgz" -C "$W" logs
[[ -s $OUT/peers.json ]] || echo '{}' >"$OUT/peers.json"
n() { grep -cE "^\S+ +$1" "$OUT/summary.txt"; }
echo "total $((SECONDS - T0))s: $(n passed) passed, $(n FAILED) failed, $(n TIMEOUT) cut off," \
    "$(n 'NO TIME') not started for lack of time, $(n skipped) skipped, $(n 'not chosen') not chosen" |
    tee -a "$OUT/summary.txt"
rm -rf "$W"
(($(n FAILED) == 0))
