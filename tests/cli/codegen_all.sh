#!/usr/bin/env bash
# tests/cli/codegen_all.sh: the CPU code generator over every example and test program, fused
# and --no-fuse, for this host's CPU, x86-64-v3 and x86-64-v2 (16-, 32- and 64-byte vectors):
# each module generated (`--emit=llvm`: fusec's IR to LLVM IR, verified by LLVM) without
# LLVM's optimizer and code generator. Its point is the sanitizer pass, whose program tests
# find most modules in the kernel cache the plain pass filled (the Makefile's test-asan seeds
# it, since the objects are the same and LLVM itself is not instrumented): this test still
# runs the code generator, which is fusec's code, over every program there. Skipped (77)
# without the CPU backend.
set -u
: "${FUSEC:?}" "${FUSEC_SRC:?}"
# shellcheck source=tests/lib.sh
source "$FUSEC_SRC/tests/lib.sh"
require_cpu_backend "$FUSEC_SRC/examples/gelu.fuse"
n=0
for src in "$FUSEC_SRC"/examples/*.fuse "$FUSEC_SRC"/tests/programs/*.fuse; do
    for cpu in "" x86-64-v3 x86-64-v2; do
        for fuse in "" --no-fuse; do
            name="$(basename "$src") ${cpu:-host} ${fuse:-fused}"
            args=(--target=cpu --emit=llvm -o "$tmp/out.ll" ${cpu:+--cpu=$cpu} ${fuse:+$fuse})
            rm -f "$tmp/out.ll"
            check "$name: generated" "$FUSEC" "${args[@]}" "$src"
            check "$name: a module with the functions' kernels" grep -q "^define .*@f0_" "$tmp/out.ll"
            n=$((n + 1))
        done
    done
done
echo "$n modules; $pass passed, $fail failed"
[ "$fail" -eq 0 ]
