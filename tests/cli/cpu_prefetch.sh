#!/usr/bin/env bash
# tests/cli/cpu_prefetch.sh: the CPU backend's row kernels prefetch the next row from inside
# their vectorized loops (codegen/llvm_prefetch.c): the object code a softmax builds to holds
# prefetch instructions in the loop that computes exp, at scalar addresses, none of the hint
# functions the generator calls survive into it (they would be undefined symbols); a column
# reduction prefetches rows ahead in its vectorized loop; an element-wise kernel has no
# prefetches. Skipped (77) without the CPU backend or objdump.
set -u
: "${FUSEC:?}" "${FUSEC_SRC:?}"
# shellcheck source=tests/lib.sh
source "$FUSEC_SRC/tests/lib.sh"
command -v objdump >/dev/null || { echo "no objdump"; exit 77; }

# the object code of `fusec --target=cpu FILE`, disassembled (the cache entry's ELF part)
disassemble() { # disassemble FILE.fuse OUT
    local dir="$tmp/cache-$(basename "$1" .fuse)"
    "$FUSEC" --target=cpu --cache-dir="$dir" "$1" >/dev/null 2>&1 || return 1
    python3 - "$dir" "$2.o" <<'EOF' || return 1
import glob, sys
entries = glob.glob(sys.argv[1] + "/e-*.bin")
assert len(entries) == 1, entries
data = open(entries[0], "rb").read()
open(sys.argv[2], "wb").write(data[data.index(b"\x7fELF"):])
EOF
    objdump -d --no-show-raw-insn "$2.o" >"$2.s"
}

# whether every prefetch of a disassembly sits among instructions matching REGEX (the vector
# arithmetic of the loop it belongs to), not in a loop of its own
prefetches_among() { # prefetches_among FILE.s REGEX
    python3 - "$1" "$2" <<'EOF'
import re, sys
lines = open(sys.argv[1]).read().splitlines()
hits = [i for i, l in enumerate(lines) if "prefetch" in l]
near = lambda i: [l for l in lines[max(0, i - 40):i + 40] if re.search(sys.argv[2], l)]
sys.exit(0 if hits and all(near(i) for i in hits) else 1)
EOF
}

disassemble "$FUSEC_SRC/examples/softmax.fuse" "$tmp/softmax" || {
    echo "no CPU backend"
    exit 77
}
check "the softmax object names no prefetch hint" \
    bash -c "! grep -q fusec_prefetch '$tmp/softmax.o'"
n=$(grep -c prefetch "$tmp/softmax.s")
check "softmax prefetches (found $n prefetch instructions)" test "$n" -ge 4
# the exp loop: its prefetches sit among vector arithmetic, not in a loop of their own
check "softmax's prefetches are in a vectorized loop" \
    prefetches_among "$tmp/softmax.s" 'v(fmadd|mul)\w*ps'
# their addresses are scalars (addressing modes on the loop's index), not lane 0 of a vector
# of addresses moved out of a vector register for each prefetch
check "softmax's prefetch addresses are not extracted from vectors" python3 - "$tmp/softmax.s" <<'EOF'
import sys
lines = open(sys.argv[1]).read().splitlines()
sys.exit(any("prefetch" in l and "vmovq" in p for p, l in zip(lines, lines[1:])))
EOF

# a column reduction prefetches rows ahead of the one it sums, among its vector additions
cat >"$tmp/colsum.fuse" <<'EOF'
fn colsum(x: f32[R, C]) -> f32[1, C] {
    return sum(x, axis=0);
}
EOF
disassemble "$tmp/colsum.fuse" "$tmp/colsum" || exit 1
n=$(grep -c prefetch "$tmp/colsum.s")
check "a column sum prefetches (found $n prefetch instructions)" test "$n" -ge 4
check "the column sum's prefetches are in its vectorized loop" \
    prefetches_among "$tmp/colsum.s" 'vadd\w*ps'

disassemble "$FUSEC_SRC/examples/gelu.fuse" "$tmp/gelu" || exit 1
check "gelu (element-wise) has no prefetches" bash -c "! grep -q prefetch '$tmp/gelu.s'"

echo "$pass passed, $fail failed"
[ "$fail" -eq 0 ]
