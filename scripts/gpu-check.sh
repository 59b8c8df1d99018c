#!/usr/bin/env bash
# scripts/gpu-check.sh BUILD OUT: the GPU suite and the GPU benchmarks in one go, for a
# machine with a GPU that has neither re2c nor LLVM nor xxHash (the lent device machines).
# Build here, carry the build, and run this there from the repository root:
#
#   cmake -S . -B build-gpu -DCMAKE_BUILD_TYPE=Release -DFUSEC_LLVM=OFF -DFUSEC_STATIC_XXHASH=ON
#   cmake --build build-gpu -j2
#   (there)  bash scripts/gpu-check.sh build-gpu "$OUT"
#
# It runs the tests directly (ctest files hold this machine's paths), writes every log under
# OUT and prints a summary last. Each device call has 10 minutes: QUICK=1 runs the tests
# only, BENCH=1 the benchmarks only (PyTorch's peers through bench/torch_peers.py).
set -u
B=${1:?build directory}
OUT=${2:?output directory}
mkdir -p "$OUT"
export FUSEC="$PWD/$B/fusec" FUSEC_SRC="$PWD" FUSEC_CACHE_DIR="$OUT/cache" PYTHONUNBUFFERED=1
summary=()
step() { # NAME CMD...: runs CMD with its output in OUT/NAME.log, notes its exit code
    local name=$1
    shift
    local t0=$SECONDS
    "$@" >"$OUT/$name.log" 2>&1
    local rc=$?
    local what=passed
    ((rc == 77)) && what=skipped
    ((rc != 0 && rc != 77)) && what="FAILED (exit $rc)"
    summary+=("$(printf '%-16s %-18s %4ds' "$name" "$what" $((SECONDS - t0)))")
    tail -3 "$OUT/$name.log"
}
{
    nvidia-smi --query-gpu=name,driver_version,memory.total --format=csv,noheader
    "$FUSEC" --version
    git rev-parse --short HEAD 2>/dev/null
    date -u +%Y-%m-%d
} >"$OUT/device.txt" 2>&1
cat "$OUT/device.txt"
step start "$FUSEC" --target=cuda -v "$FUSEC_SRC/examples/gelu.fuse"
[[ ${BENCH:-0} == 1 ]] || {
step api "$B/tests/test_api"
step runtime "$B/tests/test_gpu_runtime"
step inplace "$B/tests/test_inplace"
step strides "$B/tests/test_strides"
step dlpack "$B/tests/test_dlpack"
step rand env FUSEC_TEST_TARGET=cuda python3 tests/py/test_rand.py
step argmax env FUSEC_TEST_TARGET=cuda python3 tests/py/test_argmax.py
step grad env FUSEC_TEST_TARGET=cuda python3 tests/py/test_grad.py
step views env FUSEC_TEST_TARGET=cuda python3 tests/py/test_cli_views.py
step python env FUSEC_TEST_TARGET=cuda PYTHONPATH=python FUSEC_LIBRARY="$PWD/$B/libfusec.so" \
    python3 tests/python/test_package.py
step embed bash tests/gpu/embed.sh "$B/embed"
step mock env FUSEC_CUDA_DRIVER="$PWD/$B/tests/libcuda_mock.so" "$B/tests/test_cuda_mock"
step programs env FUSEC_TEST_TARGET=cuda python3 tests/py/test_cpu_backend.py
step random env FUSEC_TEST_TARGET=cuda python3 tests/py/test_random_programs.py
step sanitizer bash tests/gpu/sanitizer.sh "$B/tests/test_gpu_runtime" "$B/embed"
}
if [[ ${QUICK:-0} != 1 ]]; then
    step chain20-stream "$FUSEC" bench bench/programs/chain20.fuse -f chain20 --no-fuse \
        --target=cuda --dim N=1048576 --launch=stream --reps 200
    step chain20-plan "$FUSEC" bench bench/programs/chain20.fuse -f chain20 --no-fuse \
        --target=cuda --dim N=1048576 --launch=plan --reps 200
    step bench python3 bench/run.py --fusec "$FUSEC" --target cuda --out "$OUT/bench"
    step bench-grad python3 bench/grad.py --fusec "$FUSEC" --target cuda
    step bench-adamw python3 bench/adamw.py --lib "$PWD/$B/libfusec.so" --target cuda \
        --sizes 20,24,26
fi
printf '%s\n' "${summary[@]}"
