#!/usr/bin/env bash
# tests/cli/cpu_prefetch.sh: the CPU backend's row kernels prefetch the next row from inside
# their vectorized loops, and column reductions prefetch rows ahead (codegen/cpu/llvm_prefetch.c),
# on every CPU the suite knows, not only the host: the object code of a softmax and of a
# column sum, built for the host and (compile only, FUSEC_CPU) for x86-64-v2, x86-64-v3,
# znver3, znver4, skylake-avx512 and sapphirerapids, holds prefetches in a vectorized loop,
# one per cache line of the vectors that loop loads, at scalar addresses (prefetch_loops.py
# says exactly what is checked), and none of the hint functions the generator calls (they
# would be undefined symbols); an element-wise kernel has no prefetches. How many prefetches
# there are depends on the vector width and interleaving LLVM picks for each CPU, so no count
# is asserted. Skipped (77) without the CPU backend or objdump.
set -u
: "${FUSEC:?}" "${FUSEC_SRC:?}"
# shellcheck source=tests/lib.sh
source "$FUSEC_SRC/tests/lib.sh"
command -v objdump >/dev/null && command -v ld >/dev/null || { echo "no objdump or ld"; exit 77; }
loops="$FUSEC_SRC/tests/cli/prefetch_loops.py"

# the object code of `FUSEC_CPU=CPU fusec --target=cpu FILE`, disassembled (the module's cache
# entry: the one that holds its task functions, "f0_...", not the short rows' copy functions
# beside it; its objects, one or more parts built on as many threads, linked into one by
# `ld -r` so that no two functions share an address); building needs no CPU of that kind, only
# running would. Returns 1 where fusec fails, 2 where its cache does not hold the module as
# one entry.
disassemble() { # disassemble CPU FILE.fuse OUT
    local dir="$tmp/cache-$1-$(basename "$2" .fuse)"
    FUSEC_CPU=$1 "$FUSEC" --target=cpu --cache-dir="$dir" "$2" >/dev/null 2>&1 || return 1
    python3 - "$dir" "$3.part" <<'EOF' || return 2
import glob, sys
entries = [e for e in glob.glob(sys.argv[1] + "/e-*.bin") if b"f0_" in open(e, "rb").read()]
assert len(entries) == 1, entries
data = open(entries[0], "rb").read()
starts = [i for i in range(len(data)) if data.startswith(b"\x7fELF", i)]
for k, s in enumerate(starts):
    end = starts[k + 1] if k + 1 < len(starts) else len(data)
    open(f"{sys.argv[2]}{k}.o", "wb").write(data[s:end])
EOF
    ld -r -o "$3.o" "$3".part*.o || return 2
    objdump -d --no-show-raw-insn "$3.o" >"$3.s"
}

cat >"$tmp/colsum.fuse" <<'EOF'
fn colsum(x: f32[R, C]) -> f32[1, C] {
    return sum(x, axis=0);
}
EOF

disassemble native "$FUSEC_SRC/examples/softmax.fuse" "$tmp/probe"
case $? in
0) ;;
1)
    echo "no CPU backend"
    exit 77
    ;;
*)
    echo "FAIL: the softmax module is not one entry of the cache"
    exit 1
    ;;
esac

cpus=(native x86-64-v2 x86-64-v3 znver3 znver4 skylake-avx512 sapphirerapids)
# under the sanitizers (FUSEC_CPU_TEST_QUICK), which look at fusec's own code (the same for
# every CPU), the host and the narrowest vectors only; the plain pass builds for every CPU
[ "${FUSEC_CPU_TEST_QUICK:-}" = 1 ] && cpus=(native x86-64-v2)
for cpu in "${cpus[@]}"; do
    s="$tmp/softmax-$cpu"
    c="$tmp/colsum-$cpu"
    check "$cpu: softmax builds" disassemble "$cpu" "$FUSEC_SRC/examples/softmax.fuse" "$s"
    check "$cpu: the softmax object names no prefetch hint" \
        bash -c "! grep -q fusec_prefetch '$s.o'"
    # the exp loop: prefetches among its vector arithmetic, one per line of what it loads;
    # rows in groups (of 64, say) fetch the next group's a line at a time, for reading and
    # for writing (codegen/cpu/llvm.c, group_prefetch)
    check "$cpu: softmax's prefetches ($(grep -c prefetch "$s.s") of them)" \
        python3 "$loops" "$s.s" '^v?(fmadd|fnmadd|mul)\w*ps' --group
    check "$cpu: the column sum builds" disassemble "$cpu" "$tmp/colsum.fuse" "$c"
    check "$cpu: the column sum's prefetches ($(grep -c prefetch "$c.s") of them)" \
        python3 "$loops" "$c.s" '^v?add\w*ps'
    check "$cpu: the column sum names no prefetch hint" bash -c "! grep -q fusec_prefetch '$c.o'"
done

disassemble native "$FUSEC_SRC/examples/gelu.fuse" "$tmp/gelu" || exit 1
check "gelu (element-wise) has no prefetches" bash -c "! grep -q prefetch '$tmp/gelu.s'"

echo "$pass passed, $fail failed"
[ "$fail" -eq 0 ]
