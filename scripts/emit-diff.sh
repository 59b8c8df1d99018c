#!/usr/bin/env bash
# scripts/emit-diff.sh: whether two builds of fusec generate the same code, for refactors that
# must not change behaviour (a shared kernel plan, a split function, a moved table). For every
# .fuse file given (default: examples/, tests/programs/, bench/programs/ and, with
# RANDOM_COUNT=N, N random programs from tests/cli_py/test_random_programs.py's generator) it compares what the two
# builds print: --emit=ir, the -v fusion report (timings removed), --emit=cuda and --emit=llvm
# (--target=cpu), each fused and --no-fuse, with exit codes and messages. Prints each file and
# mode that differs and exits 1 if any does.
#
#   scripts/emit-diff.sh OLD_BUILD NEW_BUILD [FILE.fuse...]
#   RANDOM_COUNT=200 scripts/emit-diff.sh /tmp/build-before build
#
# OLD_BUILD is a build directory of the unchanged tree (e.g. `git worktree add /tmp/before
# HEAD` and build it there); each build runs with its own libfusec_llvm.so.
set -u
[ $# -ge 2 ] || { sed -n '2,14p' "$0"; exit 2; }
old=$(cd "$1" && pwd) new=$(cd "$2" && pwd)
shift 2
src=$(cd "$(dirname "$0")/.." && pwd)
work=$(mktemp -d)
trap 'rm -rf "$work"' EXIT

files=("$@")
if [ ${#files[@]} -eq 0 ]; then
    files=("$src"/examples/*.fuse "$src"/tests/programs/*.fuse "$src"/bench/programs/*.fuse)
fi
if [ -n "${RANDOM_COUNT:-}" ]; then
    # the generator writes p<case>.fuse (and inputs) into FUSEC_RANDOM_KEEP as it runs them
    FUSEC="$old/fusec" FUSEC_SRC="$src" FUSEC_RANDOM_KEEP="$work/random" \
        FUSEC_RANDOM_PROGRAMS="$RANDOM_COUNT" FUSEC_CPU_TEST_QUICK=1 \
        python3 "$src/tests/cli_py/test_random_programs.py" >/dev/null 2>&1
    files+=("$work"/random/p*.fuse)
fi

modes=("--emit=ir --target=ref" "-v --target=ref" "--emit=cuda --arch=sm_90" "--emit=llvm --target=cpu")
run() { # run BUILD MODE NOFUSE FILE OUT
    local b=$1
    # shellcheck disable=SC2086
    FUSEC_LLVM_MODULE="$b/libfusec_llvm.so" "$b/fusec" $2 $3 --no-cache "$4" >"$5.out" 2>"$5.err"
    echo "exit $?" >>"$5.out"
    grep -v '^time:\|^cpu: \(build\|plan\)' "$5.err" >"$5.err2" || true
}
bad=0 n=0
for f in "${files[@]}"; do
    for mode in "${modes[@]}"; do
        for nf in "" --no-fuse; do
            run "$old" "$mode" "$nf" "$f" "$work/a"
            run "$new" "$mode" "$nf" "$f" "$work/b"
            n=$((n + 1))
            if ! cmp -s "$work/a.out" "$work/b.out" || ! cmp -s "$work/a.err2" "$work/b.err2"; then
                echo "DIFFERS: $f ($mode $nf)"
                bad=$((bad + 1))
            fi
        done
    done
done
echo "$n comparisons over ${#files[@]} files: $bad differ"
[ "$bad" -eq 0 ]
