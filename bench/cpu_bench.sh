#!/usr/bin/env bash
# bench/cpu_bench.sh: builds fusec (Release) and bench/cpu_bench, and runs it: the CPU
# backend's gelu, softmax and layernorm against a multithreaded copy and a hand-written
# OpenMP loop, and its compile times (see bench/cpu_bench.c). Run on an otherwise quiet
# machine; the figures go into bench/RESULTS.md by hand.
#
#   bench/cpu_bench.sh [ROUNDS]        BUILD=/tmp/build-bench to choose the build directory
set -eu
SRC=$(cd "$(dirname "$0")/.." && pwd)
BUILD=${BUILD:-/tmp/build-bench}
ROUNDS=${1:-7}

cmake -S "$SRC" -B "$BUILD" -DCMAKE_BUILD_TYPE=Release >/dev/null
cmake --build "$BUILD" -j 2 --target fusec fusec_static fusec_llvm >/dev/null

# the anchor as a programmer would build it; the driver links the static library (which
# loads the LLVM module, libfusec_llvm.so, from the build tree when it compiles)
gcc -O3 -march=native -ffast-math -fopenmp -c "$SRC/bench/gelu_anchor.c" -o "$BUILD/gelu_anchor.o"
gcc -O2 -std=gnu11 -I"$SRC/include" -I"$SRC" "$SRC/bench/cpu_bench.c" "$BUILD/gelu_anchor.o" \
    -o "$BUILD/cpu_bench" "$BUILD/libfusec.a" -fopenmp -lxxhash -lpthread -lm -ldl

echo "device: $(grep -m1 'model name' /proc/cpuinfo | cut -d: -f2- | sed 's/^ *//'), $(nproc) cores," \
     "$(grep -m1 -o -w "avx512f\|avx2" /proc/cpuinfo | sort -r | head -1)"
echo "date: $(date -u +%Y-%m-%d)   commit: $(git -C "$SRC" rev-parse --short HEAD 2>/dev/null || echo uncommitted)"
# OpenMP's threads must not spin while fusec's run
OMP_WAIT_POLICY=passive "$BUILD/cpu_bench" "$BUILD/fusec" "$SRC" "$ROUNDS"
