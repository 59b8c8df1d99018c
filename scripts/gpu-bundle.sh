#!/usr/bin/env bash
# scripts/gpu-bundle.sh BUILD DEST [--check]: copies what scripts/gpu-check.sh runs on a GPU machine into
# DEST, and nothing else, so that the device call carries megabytes, not a build tree:
#
#   DEST/bin/   fusec, libfusec.so, examples/embed and the C tests the check runs, from BUILD
#   DEST/src/   the files of this checkout they read: the programs, the Python tests and
#               package, the GPU suite's scripts, the benchmarks' programs and scripts, this
#               script and gpu-check.sh (tracked files only: no caches, no build outputs)
#   DEST/BUNDLE.txt  the commit, the build's settings and each binary's `ldd`
#   DEST/one_answer/ with ONE_ANSWER=DIR, a copy of DIR: the CPU target's results of
#               tests/cli_py/test_one_answer.py (`--write DIR`), which CUDA's are compared with
#   DEST/bin/aot_demo_cuda  with AOT_DEMO=FILE, that program: examples/aot/main.c built
#               against a CUDA library (tests/gpu/aot.sh runs it)
#
# `make gpu-bundle` builds BUILD=build-gpu without LLVM and with xxHash linked in, then runs
# this with DEST=gpu-bundle (git-ignored) and --check: under 15 MB, and no binary needing a
# library outside glibc and libgcc (the GPU machines have no Boost, LLVM or xxHash), or exit 1
# naming what is wrong. The test of the dry run (ctest gpu_check.dry) bundles the test build.
set -u
B=${1:?build directory}
D=${2:?bundle directory}
CHECK=${3:-}
ROOT=$(cd "$(dirname "$0")/.." && pwd)
B=$(cd "$B" && pwd) || exit 1

bins=(fusec embed tests/test_api tests/test_gpu_runtime tests/test_inplace tests/test_strides
    tests/test_dlpack tests/test_grad_reductions tests/test_nvrtc)
for f in "${bins[@]}" libfusec.so; do
    [ -e "$B/$f" ] || {
        echo "gpu-bundle: $B/$f is missing: build it first" >&2
        exit 1
    }
done
rm -rf "$D"
mkdir -p "$D/bin" "$D/src"
for f in "${bins[@]}"; do
    cp "$B/$f" "$D/bin/"
done
# the shared library under its own name and its soname (embed may be linked against it)
cp -L "$B/libfusec.so" "$D/bin/libfusec.so"
# no debug information (most of a RelWithDebInfo binary): the symbols stay, which is what
# compute-sanitizer's and a crash's backtraces name functions by
command -v strip >/dev/null 2>&1 && strip --strip-debug "$D"/bin/*
soname=$(objdump -p "$D/bin/libfusec.so" 2>/dev/null | awk '$1 == "SONAME" { print $2 }')
[ -n "$soname" ] && [ "$soname" != libfusec.so ] && ln -sf libfusec.so "$D/bin/$soname"

# what the tests and benchmarks read, as tracked in this checkout
src=(examples tests/cli_py tests/package tests/programs tests/gpu tests/lib.sh python/fusec
    bench/programs bench/torch_peers.py bench/run.py bench/compile_time.py bench/cpu_levels.py
    ir/ops.def README.md scripts/gpu-check.sh scripts/gpu-bundle.sh)
if git -C "$ROOT" rev-parse --git-dir >/dev/null 2>&1; then
    git -C "$ROOT" ls-files -z -- "${src[@]}" | (cd "$ROOT" && xargs -0 cp --parents -t "$D/src")
else
    (cd "$ROOT" && cp -r --parents "${src[@]}" "$D/src")
fi
# embed.c is built, not run from source; the check reads no example's C
rm -f "$D/src/examples/"*.c
# the CPU target's results that tests/cli_py/test_one_answer.py compares CUDA's with (make
# gpu-bundle writes them with the LLVM build: the bundle has no CPU target)
if [ -n "${ONE_ANSWER:-}" ]; then
    cp -r "$ONE_ANSWER" "$D/one_answer" || exit 1
fi
# a program linked with a library built ahead of time (the bundle's build, without LLVM, cannot
# write one: make gpu-bundle does with the LLVM build)
if [ -n "${AOT_DEMO:-}" ]; then
    cp "$AOT_DEMO" "$D/bin/aot_demo_cuda" || exit 1
    command -v strip >/dev/null 2>&1 && strip --strip-debug "$D/bin/aot_demo_cuda"
fi

{
    echo "commit: $(git -C "$ROOT" describe --always --dirty 2>/dev/null || echo unknown)"
    echo "made: $(date -u '+%Y-%m-%d %H:%M UTC') from $B"
    grep -E '^(CMAKE_BUILD_TYPE|FUSEC_LLVM|FUSEC_STATIC_XXHASH|CMAKE_C_COMPILER):' \
        "$B/CMakeCache.txt" 2>/dev/null
    for f in "$D"/bin/*; do
        [ -L "$f" ] && continue
        echo "ldd $(basename "$f"):"
        ldd "$f" 2>&1 | sed 's/ (0x[0-9a-f]*)$//; s/^[[:space:]]*/  /'
    done
} >"$D/BUNDLE.txt"
echo "gpu-bundle: $D: $(du -sh "$D" | cut -f1), $(find "$D" -type f | wc -l) files"

[ "$CHECK" = --check ] || exit 0
bad=0
bytes=$(du -sb "$D" | cut -f1)
if [ "$bytes" -ge $((15 * 1024 * 1024)) ]; then
    echo "gpu-bundle: $D holds $bytes bytes, over 15 MB" >&2
    bad=1
fi
# what a lent GPU machine has for certain: glibc, libgcc; libfusec's soname is in the bundle
ok='^(linux-vdso\.so\.1|libc\.so\.6|libm\.so\.6|libdl\.so\.2|libpthread\.so\.0|librt\.so\.1|libgcc_s\.so\.1|ld-linux[-a-z0-9_.]*\.so\.[0-9]|libfusec\.so\.[0-9]+)$'
for f in "$D"/bin/*; do
    [ -L "$f" ] && continue
    while read -r lib _; do
        lib=${lib##*/}
        if ! [[ $lib =~ $ok ]]; then
            echo "gpu-bundle: $(basename "$f") needs $lib, which a GPU machine may lack" >&2
            bad=1
        fi
    done < <(ldd "$f" 2>&1 | grep -v 'statically linked')
    if ldd "$f" 2>&1 | grep -q 'not found'; then
        echo "gpu-bundle: $(basename "$f"): $(ldd "$f" 2>&1 | grep 'not found')" >&2
        bad=1
    fi
done
exit $bad
