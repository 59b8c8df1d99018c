"""tests/cli_py/test_deep_programs.py: programs whose kernels hold a great deal of math compile in
bounded time on the CPU, and give the same bits as small kernels.

1. Compile time (issue 29): sin nested 150 deep with its gradient took 70 s to 300 s to compile,
   the math inlined into one huge kernel; above a budget the math is called out of line now
   (codegen/cpu/llvm_outline.c) and it takes under half a second. This and a few other shapes
   (many independent transcendentals, a deep where nest, a long chain of exp, f64) must each
   compile, cold (--no-cache), within CEILING_S seconds of CPU time: a generous ceiling, over
   ten times what any of them takes, that holds under the sanitizers and on a loaded machine
   and still fails a return of the explosion.
2. Bits: one kernel that computes every float function 30 times (over the budget, so each goes
   out of line, scalar and vector copies; its object code must call vector copies) gives for
   each function the very bits a kernel computing that function alone (inlined) gives, in f32,
   f64, f16 and bf16, and with --fast-math; inputs include NaN, infinities, zeros, subnormals
   and huge values, at a size that leaves a scalar remainder after the vector loops. NaN may
   differ in sign and payload only (as fusectest.same_but_nan_signs says).
3. The deep programs run and agree with the reference (--target=ref) within the SPEC's
   tolerances.
4. A module of many row kernels holds few narrow bodies (short rows as columns: each costs
   0.3-1 s to compile; codegen/cpu/llvm.c, LG_NARROW_MODULE_BUDGET): 12 softmax and layernorm
   kernels get one to four (two with 64-byte vectors, four with fewer units for shorter rows
   without), the others run short rows in their row kernels (the same bits:
   tests/cli_py/test_reduction_order.py), while each alone gets one; the module compiles
   within CEILING_S."""
import glob
import os
import re
import sys

sys.path.insert(0, os.path.dirname(__file__))
import deepprog  # noqa: E402
from deepprog import (BINARY, DEEP, UNARY, bits_inputs, bits_program,  # noqa: E402
                      check_against_ref, check_bits_run, compile_cpu_seconds, write)
from fusectest import check, finish, run, target_or_skip, tmpdir  # noqa: E402

TARGET = target_or_skip()
if TARGET != "cpu":
    print("the CPU backend's math budget: nothing to test on", TARGET)
    sys.exit(77)

OUT = tmpdir()
CEILING_S = 30.0


# FUSEC_CPU_TEST_QUICK (the sanitizers' pass, the other CPU levels): one of the deep programs,
# the bits in f32 and f16 (x86-64-v2 converts f16 without F16C) without --fast-math
QUICK = os.environ.get("FUSEC_CPU_TEST_QUICK") == "1"
if QUICK:
    DEEP = {"sin150_grad": DEEP["sin150_grad"]}

for name, text in DEEP.items():
    path = write(OUT, name + ".fuse", text)
    s = compile_cpu_seconds(["--target=cpu", "--no-cache", path])
    print(f"{name}: {s if s is None else round(s, 2)} s of CPU time")
    check(s is not None and s < CEILING_S, f"{name}: compiled in {s} s of CPU time "
          f"(ceiling {CEILING_S})")


def plan_levels(path):
    """The most levels of reductions in any kernel of path's plan (`--emit=plan`: a line
    `sweep N: <reductions>` per level, then one for the per-element stores)."""
    rc, out, err = run(["--emit=plan", path])
    check(rc == 0, f"{path}: --emit=plan: exit {rc}: {err[-400:]}")
    most = n = 0
    for line in out.splitlines():
        if line.lstrip().startswith("kernel "):
            n = 0
        elif re.match(r"\s*sweep \d+: ", line) and "per-element" not in line:
            n += 1
            most = max(most, n)
    return most


# a chain of row reductions is cut into kernels of at most PASS_MAX_KERNEL_LEVELS levels
levels = plan_levels(write(OUT, "rows100_grad.fuse", deepprog.DEEP["rows100_grad"]))
check(1 <= levels <= 5, f"rows100_grad: a kernel of {levels} levels of reductions (at most 5)")


def vector_copies(cache):
    """The names of the out-of-line vector copies in the object code in the kernel cache
    `cache` (only those called are kept: llvm_outline.c)."""
    names = set()
    for entry in glob.glob(os.path.join(cache, "e-*.bin")):
        with open(entry, "rb") as f:
            names |= set(re.findall(rb"fusec_ool_\w+_v\d+", f.read()))
    return names


def check_bits(dtype, extra=()):
    ops = UNARY + BINARY
    tag = dtype + "".join(extra)
    path = write(OUT, f"bits_{tag}.fuse", bits_program(dtype, ops))
    files = bits_inputs(OUT, tag, dtype)
    # a cache of its own, whose object code is big's and smalls' alone
    cache = os.path.join(OUT, "cache-" + tag)
    check_bits_run(OUT, tag, path, ops, files, "cpu", (*extra, f"--cache-dir={cache}"))
    copies = vector_copies(cache)
    check(len(copies) >= 8, f"{tag}: big calls {len(copies)} vector copies of math functions "
          f"(at least 8 expected): {sorted(copies)}")


# (f16: the other CPU levels' runs, QUICK, have it, x86-64-v2's without F16C among them)
for dtype in ("f32", "f16") if QUICK else ("f32", "f64", "bf16"):
    check_bits(dtype)
if not QUICK:
    check_bits("f32", ("--fast-math",))


def narrow_bodies(path):
    """The narrow bodies (`NAME.narrow`) of path's CPU code."""
    rc, out, err = run(["--target=cpu", "--emit=llvm", path])
    check(rc == 0, f"{path}: --emit=llvm: exit {rc}: {err[-400:]}")
    return re.findall(r"^define [^@]*@(\w+)\.narrow\.body\(", out, re.M)


ROWS = "".join(
    f"fn s{i}(x: f32[R, C]) -> f32[R, C] {{\n"
    f"    let e = exp(x * {i + 2}.0 - max(x * {i + 2}.0, axis=1));\n"
    f"    return e / sum(e, axis=1);\n}}\n"
    f"fn n{i}(x: f32[R, C], w: f32[C]) -> f32[R, C] {{\n"
    f"    let d = x - mean(x, axis=1);\n"
    f"    return d / sqrt(mean(d * d, axis=1) + {i + 1}e-5) * w;\n}}\n" for i in range(6))
rows_path = write(OUT, "many_rows.fuse", ROWS)
bodies = narrow_bodies(rows_path)
check(1 <= len(bodies) <= 4, f"many_rows: {len(bodies)} narrow bodies (1 to 4 expected): {bodies}")
alone = write(OUT, "one_row.fuse", ROWS.split("fn n0")[0])
check(len(narrow_bodies(alone)) == 1, "one_row: a softmax alone has no narrow body")
print(f"many_rows: narrow bodies {bodies}")
if not QUICK:  # (the other CPU levels and the sanitizers: the count above)
    s = compile_cpu_seconds(["--target=cpu", "--no-cache", rows_path])
    print(f"many_rows: {s if s is None else round(s, 2)} s of CPU time")
    check(s is not None and s < CEILING_S, f"many_rows: compiled in {s} s of CPU time")

check_against_ref(OUT, "sin150_grad", ["f", "d"], "cpu")
if not QUICK:
    check_against_ref(OUT, "erf150_f64_grad", ["f", "d"], "cpu")
    check_against_ref(OUT, "where100_grad", ["f"], "cpu")
    check_against_ref(OUT, "rows100_grad", ["f", "d"], "cpu")
finish()
