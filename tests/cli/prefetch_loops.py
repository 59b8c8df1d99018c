"""tests/cli/prefetch_loops.py: what tests/cli/cpu_prefetch.sh asserts about the prefetches in a
disassembly (objdump -d --no-show-raw-insn, AT&T syntax), whatever vector width, unrolling
and registers LLVM picked for the CPU the code was built for:

- there is at least one prefetch;
- each sits in a loop (the innermost backward branch around it) that does vector arithmetic
  matching REGEX: the vectorized loop, not a loop of its own or a scalar remainder;
- that loop prefetches once per cache line of the vectors it loads: prefetches x 64 bytes =
  the bytes of its vector loads from memory that is not the stack or a constant, nor an
  accumulator the loop stores back to the same address (a column sum's lanes) (so 2
  prefetches for four 32-byte loads, 4 for four 64-byte ones, 1 for four 16-byte ones);
- the prefetches of a loop have distinct addresses (the same operand text counts as the same
  address unless a register of it is written between the two: a loop over two rows reuses
  its registers for the second row's addresses);
- no prefetch address was just moved out of a vector register (vmovq / vpextrq): addresses
  are scalars on the loop's index.

Two kinds of loop are exempt: a narrow kernel's (short rows run as columns, a function
`*.narrow.body`) fetches its next unit's rows a line at a time in a loop of its own, and so
does a row kernel (`*.body`) for the next group of its short rows; such a loop must hold one
prefetch and nothing but scalar loop control.

With --group, the row kernel must also have such loops for its next group, for a kernel whose
rows are grouped, short and stored plainly (softmax over rows of 64): at least two (its reads'
and its writes'), one of them reading (prefetcht0) and, where the CPU has prefetchw (any
prefetchw in the file: a narrow kernel's writes use it too), one writing (prefetchw).

Usage: prefetch_loops.py FILE.s REGEX [--group]. Prints what it found; exit 1 with the reason
when a property fails."""
import re
import sys

LINE = re.compile(r"^\s*([0-9a-f]+):\s+(\S+)\s*(.*)$")
BRANCH = re.compile(r"^([0-9a-f]+) <")
MEM = re.compile(r"(-?0x[0-9a-f]+|-?\d+)?\((%\w+)?(?:,(%\w+),(\d))?\)")
VREG = re.compile(r"%([xyz])mm\d+$")
WIDTH = {"x": 16, "y": 32, "z": 64}
SCALAR = re.compile(r"^v?(movs[sd]|movd|movq|broadcast|vbroadcast|pbroadcast|insert|cvtss|cvtsd)")


FUNC = re.compile(r"^([0-9a-f]+) <(.*)>:$")
CONTROL = re.compile(r"^(add|sub|inc|dec|cmp|test|lea|mov|j\w+)$")


def parse(path):
    """The instructions (address, mnemonic, operands) and where each function starts."""
    insns, funcs = [], []
    for text in open(path).read().splitlines():
        f = FUNC.match(text.strip())
        if f:
            funcs.append((int(f.group(1), 16), f.group(2)))
            continue
        m = LINE.match(text)
        if m:
            insns.append((int(m.group(1), 16), m.group(2), m.group(3).split("#")[0].strip()))
    return insns, funcs


def function_at(funcs, addr):
    name = ""
    for a, n in funcs:
        if a <= addr:
            name = n
    return name


def line_loop(body, nprefetch):
    """A narrow kernel's loop of prefetches: one prefetch, the rest scalar loop control."""
    return nprefetch == 1 and all(op.startswith("prefetch") or CONTROL.match(op)
                                  for _, op, _ in body)


def innermost_loop(insns, addr):
    best = None
    for a, op, args in insns:
        m = BRANCH.match(args)
        if not op.startswith("j") or not m:
            continue
        t = int(m.group(1), 16)
        if t <= addr < a and (best is None or a - t < best[1] - best[0]):
            best = (t, a)
    return best


def operands(args):
    return [p.strip() for p in re.split(r",(?![^(]*\))", args)]


def stored(body):
    """The memory operands the loop's vector stores write (AT&T: the last operand)."""
    out = set()
    for _, op, args in body:
        parts = operands(args)
        if len(parts) >= 2 and VREG.search(parts[0]) and MEM.search(parts[-1]):
            out.add(parts[-1])
    return out


def load_bytes(op, args, written=()):
    """Bytes a vector load from non-stack memory reads; 0 for anything else, and for memory
    the loop writes back (written: an accumulator in memory, not an input)."""
    if op.startswith("prefetch") or SCALAR.match(op):
        return 0
    parts = operands(args)
    if len(parts) < 2:
        return 0
    dst = VREG.search(parts[-1])
    mem = [MEM.search(p) for p in parts[:-1]]
    mem = [m for m in mem if m]
    if not dst or not mem or "{" in args:
        return 0
    if (mem[0].group(2) or "") in ("%rsp", "%rip") or mem[0].group(0) in written:
        return 0
    return WIDTH[dst.group(1)]


def from_vector(insns, i):
    """Whether a register of prefetch i's address was last written by a move out of a vector
    register (looking back at most 40 instructions)."""
    m = MEM.search(insns[i][2])
    regs = {r for r in (m.group(2), m.group(3)) if r} if m else set()
    for _, op, args in reversed(insns[max(0, i - 40):i]):
        dst = args.split(",")[-1].strip() if args else ""
        if dst in regs:
            if op.startswith(("vmovq", "vpextrq", "movq", "pextrq")) and "mm" in args:
                return True
            regs.discard(dst)
        if not regs:
            return False
    return False


def reg_family(reg):
    """%rax, %eax, %ax and %al are one register; so are %r8, %r8d, %r8w and %r8b."""
    r = reg.lstrip("%")
    m = re.match(r"^(r\d+)[dwb]?$", r)
    if m:
        return m.group(1)
    m = re.match(r"^[re]?([abcd])[xlh]$", r)
    if m:
        return m.group(1)
    m = re.match(r"^[re]?(si|di|sp|bp)l?$", r)
    return m.group(1) if m else r


def same_address(insns, i, j):
    """Whether prefetches i < j read one address: the same operand, none of whose registers
    an instruction between them writes."""
    if insns[i][2] != insns[j][2]:
        return False
    m = MEM.search(insns[i][2])
    regs = {reg_family(r) for r in (m.group(2), m.group(3)) if r} if m else set()
    for _, op, args in insns[i + 1:j]:
        parts = operands(args) if args else []
        if parts and parts[-1].startswith("%") and reg_family(parts[-1]) in regs:
            return False
    return True


def main(path, arith, group=False):
    insns, funcs = parse(path)
    group_ops = []
    pf = [i for i, (_, op, _) in enumerate(insns) if op.startswith("prefetch")]
    if not pf:
        print("no prefetch instructions")
        return 1
    loops = {}
    for i in pf:
        loop = innermost_loop(insns, insns[i][0])
        if loop is None:
            print(f"the prefetch at {insns[i][0]:x} is in no loop")
            return 1
        loops.setdefault(loop, []).append(i)
        if from_vector(insns, i):
            print(f"the prefetch at {insns[i][0]:x} takes an address just moved out of a vector")
            return 1
    for (t, b), idx in sorted(loops.items()):
        body = [x for x in insns if t <= x[0] <= b]
        fn = function_at(funcs, t)
        if fn.endswith(".narrow.body"):
            if not line_loop(body, len(idx)):
                print(f"the narrow kernel's loop {t:x}-{b:x} is not one prefetch a line")
                return 1
            print(f"loop {t:x}-{b:x}: a narrow kernel's next unit, a line at a time")
            continue
        if fn.endswith(".body") and line_loop(body, len(idx)):
            op = insns[idx[0]][1]
            group_ops.append(op)
            print(f"loop {t:x}-{b:x}: a row kernel's next group, a line at a time ({op})")
            continue
        if not any(re.search(arith, op) for _, op, _ in body):
            print(f"the loop {t:x}-{b:x} with {len(idx)} prefetches does no {arith}")
            return 1
        written = stored(body)
        loaded = sum(load_bytes(op, args, written) for _, op, args in body)
        addrs = [insns[i][2] for i in idx]
        print(f"loop {t:x}-{b:x}: {len(idx)} prefetches, {loaded} bytes of vector loads")
        if any(same_address(insns, a, b) for a in idx for b in idx if a < b):
            print(f"the loop {t:x}-{b:x} prefetches one address twice: {addrs}")
            return 1
        if len(idx) * 64 != loaded:
            print(f"the loop {t:x}-{b:x} has {len(idx)} prefetches for {loaded} bytes of loads "
                  f"(one per 64-byte line expected)")
            return 1
    if group:
        want = {"prefetcht0", "prefetchw"} if any(insns[i][1] == "prefetchw" for i in pf) else {
            "prefetcht0"}
        if len(group_ops) < 2 or not want <= set(group_ops):
            print(f"the row kernel's next group is not fetched for reading and for writing "
                  f"(its line loops: {sorted(group_ops) or 'none'})")
            return 1
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1], sys.argv[2], "--group" in sys.argv[3:]))
