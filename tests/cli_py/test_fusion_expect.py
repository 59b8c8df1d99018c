"""tests/cli_py/test_fusion_expect.py: every function of every .fuse file in tests/programs/ and
examples/ states the partition fusion gives it, in comment lines just above its `fn` line,
and the suite holds the compiler to them, so that a change in fusion shows up in review as a
changed expectation:

    # expect softmax: 1 kernel (row-reduction) moves 8*R*C bytes
    # expect softmax --no-fuse: 5 kernels move 32*R*C + 16*R bytes
    fn softmax(x: f32[R, C]) -> f32[R, C] {

The first line is the fused partition: its kernel count, each kernel's kind in order, and the
bytes all its kernels move, as `fusec -v` prints them (passes/report.c: each input read once,
each output written once, a polynomial in the symbolic dims). The kinds must also be those of
the `kernel ` headers of `fusec --emit=ir`. The --no-fuse line is optional: the unfused
baseline, as `fusec -v --no-fuse` prints it (and as the fused report's `unfused` part does).
Every function needs its fused line; an expectation for no function, or one not directly
above its `fn` line (other expectation lines aside), fails too.

The facts come from --target=ref and --emit=ir, which do not depend on the host's CPU.

To regenerate them after an intended change, run with FUSEC_EXPECT_UPDATE=1:

    FUSEC=build/fusec FUSEC_EXPECT_UPDATE=1 python3 tests/cli_py/test_fusion_expect.py

which rewrites the expectation lines in place (a --no-fuse line is written for a new function
and kept where there was one), then read the diff: each changed line is a changed partition.
"""
import os
import re
import sys

sys.path.insert(0, os.path.dirname(__file__))
import fusectest  # noqa: E402
from fusectest import check, finish, run, SRC  # noqa: E402

UPDATE = os.environ.get("FUSEC_EXPECT_UPDATE") == "1"
DIRS = [os.path.join("tests", "programs"), "examples"]

FN_RE = re.compile(r"^fn\s+([A-Za-z_]\w*)\s*[(=]")  # a body, or `= grad(...)`
EXPECT_RE = re.compile(r"^#\s*expect\b")
# `# expect NAME: 2 kernels (row-reduction, pointwise) move 4*R*C + 8*R bytes`
FUSED_RE = re.compile(r"^#\s*expect\s+([A-Za-z_]\w*):\s+(\d+) kernels? \(([^)]*)\) moves? "
                      r"(.+) bytes\s*$")
# `# expect NAME --no-fuse: 5 kernels move 32*R*C + 16*R bytes`
NOFUSE_RE = re.compile(r"^#\s*expect\s+([A-Za-z_]\w*) --no-fuse:\s+(\d+) kernels? moves? "
                       r"(.+) bytes\s*$")

# the report's lines (passes/report.c)
KERNEL_RE = re.compile(r"^fusion (\w+): kernel (\d+) ([a-z-]+) ")
SUMMARY_RE = re.compile(r"^fusion (\w+): (\d+) kernels? moves? (.+?) bytes"
                        r"(?:; unfused (\d+) kernels? moves? (.+?) bytes \(.*\))?"
                        r"( \(--no-fuse\))?$")
IR_FUNC_RE = re.compile(r"^func (\w+)\(")
IR_KERNEL_RE = re.compile(r"^kernel (\d+) ([a-z-]+) ")


def plural(n, word):
    return f"{n} {word}" if n == 1 else f"{n} {word}s"


def fused_line(name, kinds, nbytes):
    verb = "moves" if len(kinds) == 1 else "move"
    return (f"# expect {name}: {plural(len(kinds), 'kernel')} ({', '.join(kinds)}) {verb} "
            f"{nbytes} bytes")


def nofuse_line(name, n, nbytes):
    verb = "moves" if n == 1 else "move"
    return f"# expect {name} --no-fuse: {plural(n, 'kernel')} {verb} {nbytes} bytes"


def fusec_report(path, extra):
    """`fusec -v --target=ref` of path: ({function: [kinds]}, {function: summary match}, names
    in order), or None (and a failure) when fusec fails or prints something unreadable."""
    rc, out, err = run(["-v", "--target=ref", *extra, path])
    what = f"fusec -v --target=ref {' '.join(extra)} {path}".replace("  ", " ")
    check(rc == 0, f"{what}: exit {rc}\n{err}")
    if rc != 0:
        return None
    kinds, summary, order = {}, {}, []
    for line in (out + err).splitlines():
        if not line.startswith("fusion "):
            continue  # the phase timings
        m = KERNEL_RE.match(line)
        if m:
            ks = kinds.setdefault(m.group(1), [])
            if m.group(1) not in order:
                order.append(m.group(1))
            check(int(m.group(2)) == len(ks), f"{what}: kernel {m.group(2)} out of order: {line}")
            ks.append(m.group(3))
            continue
        m = SUMMARY_RE.match(line)
        check(m is not None, f"{what}: a report line this test cannot read: {line}")
        if m:
            summary[m.group(1)] = m
            if m.group(1) not in order:
                order.append(m.group(1))
    return kinds, summary, order


def ir_kinds(path):
    """The kinds of the `kernel ` headers of `fusec --emit=ir`, by function."""
    rc, out, err = run(["--emit=ir", "--target=ref", path])
    check(rc == 0, f"fusec --emit=ir --target=ref {path}: exit {rc}\n{err}")
    kinds, cur = {}, None
    for line in out.splitlines():
        m = IR_FUNC_RE.match(line)
        if m:
            cur = kinds.setdefault(m.group(1), [])
            continue
        m = IR_KERNEL_RE.match(line)
        if m and cur is not None:
            cur.append(m.group(2))
    return kinds


def actual(path, rel):
    """What fusec gives each function of path: {name: (fused line, --no-fuse line)}, in the
    report's order; None when fusec fails."""
    fused = fusec_report(path, [])
    unfused = fusec_report(path, ["--no-fuse"])
    irk = ir_kinds(path)
    if fused is None or unfused is None:
        return None
    kinds, summary, order = fused
    _, nsummary, _ = unfused
    got = {}
    for name in order:
        s = summary.get(name)
        check(s is not None and s.group(4) is not None,
              f"{rel}: {name}: no summary line with the unfused baseline in fusec -v")
        ks = kinds.get(name, [])
        if s is None:
            continue
        check(int(s.group(2)) == len(ks),
              f"{rel}: {name}: fusec -v says {s.group(2)} kernels but lists {len(ks)}")
        # the partition fusec -v reports is the one --emit=ir prints
        check(irk.get(name) == ks,
              f"{rel}: {name}: kernel kinds differ between fusec -v {ks} and --emit=ir "
              f"{irk.get(name)}")
        n = nsummary.get(name)
        check(n is not None and n.group(6) is not None,
              f"{rel}: {name}: no --no-fuse summary line in fusec -v --no-fuse")
        if n is not None and s.group(4) is not None:
            # the fused report's baseline is --no-fuse of the same cleaned-up function
            check((n.group(2), n.group(3)) == (s.group(4), s.group(5)),
                  f"{rel}: {name}: the fused report's baseline ({s.group(4)} kernels, "
                  f"{s.group(5)} bytes) is not what --no-fuse gives ({n.group(2)} kernels, "
                  f"{n.group(3)} bytes)")
        nline = nofuse_line(name, int(n.group(2)), n.group(3)) if n is not None else None
        got[name] = (fused_line(name, ks, s.group(3)), nline)
    return got


def parse(lines, rel):
    """The file's functions and expectations: (fns {name: index of its fn line},
    fused {name: (index, text)}, nofuse {name: (index, text)}, problems): misplaced, duplicate
    and unreadable expectation lines are problems (failures, unless they are being rewritten)."""
    fns, fused, nofuse, problems = {}, {}, {}, []
    for i, line in enumerate(lines):
        m = FN_RE.match(line)
        if m:
            fns[m.group(1)] = i
    for i, line in enumerate(lines):
        if not EXPECT_RE.match(line):
            continue
        where = f"{rel}:{i + 1}"
        mf, mn = FUSED_RE.match(line), NOFUSE_RE.match(line)
        if not mf and not mn:
            problems.append(f"{where}: cannot read this expectation (want `# expect NAME: K "
                            f"kernels (KIND, ...) move BYTES bytes` or `# expect NAME --no-fuse: "
                            f"K kernels move BYTES bytes`):\n    {line.rstrip()}")
            continue
        name = (mf or mn).group(1)
        j = i
        while j < len(lines) and EXPECT_RE.match(lines[j]):
            j += 1
        below = FN_RE.match(lines[j]) if j < len(lines) else None
        if name not in fns:
            problems.append(f"{where}: an expectation for {name}, which is not a function of "
                            f"this file")
        elif not below or below.group(1) != name:
            problems.append(f"{where}: the expectation for {name} is not directly above "
                            f"`fn {name}` (line {fns[name] + 1})")
        elif name in (fused if mf else nofuse):
            problems.append(f"{where}: a second expectation line for {name} (the first at line "
                            f"{(fused if mf else nofuse)[name][0] + 1})")
        else:
            (fused if mf else nofuse)[name] = (i, line.rstrip())
    return fns, fused, nofuse, problems


def differences(want, got):
    """What differs between two fused expectation lines, in words."""
    a, b = FUSED_RE.match(want), FUSED_RE.match(got)
    out = []
    if a.group(2) != b.group(2):
        out.append(f"kernels: {a.group(2)} expected, {b.group(2)} now")
    ka, kb = a.group(3).split(", "), b.group(3).split(", ")
    if len(ka) != len(kb):
        if ka != kb:
            out.append(f"kinds: ({a.group(3)}) expected, ({b.group(3)}) now")
    else:
        # the same count: name the kernels whose kind changed
        out += [f"kernel {i}: {x} expected, {y} now" for i, (x, y) in enumerate(zip(ka, kb))
                if x != y]
    if a.group(4) != b.group(4):
        out.append(f"bytes: {a.group(4)} expected, {b.group(4)} now")
    return out


def nofuse_differences(want, got):
    a, b = NOFUSE_RE.match(want), NOFUSE_RE.match(got)
    out = []
    if a.group(2) != b.group(2):
        out.append(f"kernels: {a.group(2)} expected, {b.group(2)} now")
    if a.group(3) != b.group(3):
        out.append(f"bytes: {a.group(3)} expected, {b.group(3)} now")
    return out


def report_diff(where, name, want, got, what):
    check(False, f"{where}: {name}: the partition differs from the expectation "
                 f"({'; '.join(what)}):\n  - {want}\n  + {got}")


def rewrite(path, lines, got, had, nofuse):
    """Rewrites path with every expectation line replaced by what fusec gives now. had: the
    functions that had an expectation line, nofuse: those with a --no-fuse line."""
    out = []
    for line in lines:
        if EXPECT_RE.match(line):
            continue
        m = FN_RE.match(line)
        if m and m.group(1) in got:
            name = m.group(1)
            fline, nline = got[name]
            out.append(fline + "\n")
            # the --no-fuse line is optional: written for a new function, kept where it was
            if nline and (name in nofuse or name not in had):
                out.append(nline + "\n")
        out.append(line)
    if out != lines:
        with open(path, "w") as f:
            f.writelines(out)
        print(f"updated {path}")


files = []
for d in DIRS:
    full = os.path.join(SRC, d)
    files += [os.path.join(d, f) for f in sorted(os.listdir(full)) if f.endswith(".fuse")]
check(len(files) >= 10, f"only {len(files)} .fuse files found under {DIRS} from {SRC}")

for rel in files:
    path = os.path.join(SRC, rel)
    with open(path) as f:
        lines = f.readlines()
    got = actual(path, rel)
    if got is None:
        continue
    fns, fused, nofuse, problems = parse(lines, rel)
    for name in fns:
        check(name in got, f"{rel}:{fns[name] + 1}: fn {name} is not in fusec's report")
    for name in got:
        check(name in fns, f"{rel}: fusec reports a function {name} that has no `fn {name}` "
                           f"line at the start of a line")
    if UPDATE:
        rewrite(path, lines, got, set(fused) | set(nofuse), nofuse)
        continue
    for p in problems:
        check(False, p)
    for name, (fline, nline) in got.items():
        if name not in fns:
            continue
        if name not in fused:
            check(False, f"{rel}:{fns[name] + 1}: {name} has no expectation; above `fn {name}` "
                         f"write\n  {fline}\n  {nline}")
            continue
        i, want = fused[name]
        if want != fline:
            report_diff(f"{rel}:{i + 1}", name, want, fline, differences(want, fline))
        if name in nofuse and nline:
            i, want = nofuse[name]
            if want != nline:
                report_diff(f"{rel}:{i + 1}", f"{name} --no-fuse", want, nline,
                            nofuse_differences(want, nline))

if not UPDATE and fusectest.failures:
    print("(where fusec is right, FUSEC_EXPECT_UPDATE=1 rewrites the expectation lines to what "
          "it gives now: see the top of tests/cli_py/test_fusion_expect.py; then read the diff)")
finish()
