"""tests/py/test_deep_programs.py: programs whose kernels hold a great deal of math compile in
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
   tolerances."""
import glob
import os
import re
import resource
import subprocess
import sys

sys.path.insert(0, os.path.dirname(__file__))
from fusectest import (FUSEC, check, close, finish, fusec_env, fusec_run, np,  # noqa: E402
                       same_but_nan_signs, target_or_skip, tmpdir)

# the programs bench/compile_time.py times
sys.path.insert(0, os.path.join(os.path.dirname(os.path.abspath(__file__)), "..", "..", "bench"))
from compile_time import program  # noqa: E402

TARGET = target_or_skip()
if TARGET != "cpu":
    print("the CPU backend's math budget: nothing to test on", TARGET)
    sys.exit(77)

OUT = tmpdir()
CEILING_S = 30.0
# uses of each function in the big kernel: enough that, the heavier functions out of line, the
# lightest (20 instructions) and the always inline sqrt and rsqrt (5) still exceed the budget
COPIES = 30

UNARY = ["exp", "exp2", "expm1", "log", "log2", "log10", "log1p", "sqrt", "rsqrt", "sin", "cos",
         "tan", "asin", "acos", "atan", "sinh", "cosh", "tanh", "asinh", "acosh", "atanh", "erf",
         "sigmoid"]
BINARY = ["pow", "atan2", "hypot", "%"]


def write(name, text):
    path = os.path.join(OUT, name)
    with open(path, "w") as f:
        f.write(text)
    return path


def compile_cpu_seconds(path, extra=()):
    """CPU seconds (user + system) of `fusec --target=cpu --no-cache path`; None if it fails."""
    before = resource.getrusage(resource.RUSAGE_CHILDREN)
    p = subprocess.run([FUSEC, "--target=cpu", "--no-cache", *extra, path], capture_output=True,
                       text=True, timeout=600, env=fusec_env())
    after = resource.getrusage(resource.RUSAGE_CHILDREN)
    if p.returncode != 0:
        print(p.stderr[-2000:])
        return None
    return (after.ru_utime - before.ru_utime) + (after.ru_stime - before.ru_stime)


DEEP = {
    "sin150_grad": program("chain", "sin", 150, "f32", True),
    "exp300": program("chain", "exp", 300, "f32", False),
    "erf150_f64_grad": program("chain", "erf", 150, "f64", True),
    "independent_sin150_grad": program("independent", "sin", 150, "f32", True),
    "where100_grad": program("where", "sin", 100, "f32", True),
}

# FUSEC_CPU_TEST_QUICK (the sanitizers' pass, x86-64-v2): two of the deep programs, the bits in
# f32 and f16 (v2 converts f16 without F16C) without --fast-math
QUICK = os.environ.get("FUSEC_CPU_TEST_QUICK") == "1"
if QUICK:
    DEEP = {k: DEEP[k] for k in ("sin150_grad", "erf150_f64_grad")}

for name, text in DEEP.items():
    path = write(name + ".fuse", text)
    s = compile_cpu_seconds(path)
    print(f"{name}: {s if s is None else round(s, 2)} s of CPU time")
    check(s is not None and s < CEILING_S, f"{name}: compiled in {s} s of CPU time "
          f"(ceiling {CEILING_S})")


def special_inputs(n, rng, dtype):
    a = rng.uniform(-4, 4, size=n)
    a[:12] = [np.nan, np.inf, -np.inf, 0.0, -0.0, 1e-40, -1e-40, 3e38, -3e38, 1e6, 0.5, 1.0]
    a[12:40] = rng.uniform(-200, 200, size=28)
    np_dt = np.float64 if dtype == "f64" else np.float16 if dtype == "f16" else np.float32
    with np.errstate(over="ignore"):
        return a.astype(np_dt)


def expr(op, x, y):
    if op == "%":
        return f"({x} % {y})"
    return f"{op}({x}, {y})" if op in BINARY else f"{op}({x})"


def bits_program(dtype, ops):
    """One function per op (small: inlined), and `big`: every op once as a result, and each
    COPIES - 1 times more in a filler result (over the budget: called out of line)."""
    t = f"{dtype}[N]"
    src = [f"fn s{i}(x: {t}, y: {t}) -> {t} {{ return {expr(op, 'x', 'y')}; }}"
           for i, op in enumerate(ops)]
    terms = [expr(op, f"(x * {1 + k / 64})", "y") for op in ops for k in range(1, COPIES)]
    body = ["    let z0 = " + terms[0] + ";"]
    body += [f"    let z{k} = z{k - 1} + {term};" for k, term in enumerate(terms[1:], 1)]
    results = ", ".join([expr(op, "x", "y") for op in ops] + [f"z{len(terms) - 1}"])
    src.append(f"fn big(x: {t}, y: {t}) -> ({', '.join([t] * (len(ops) + 1))}) {{")
    src += body + [f"    return {results};", "}"]
    return "\n".join(src) + "\n"


def vector_copies(path, extra):
    """The names of the out-of-line vector copies in the object code of path (only those
    called are kept: llvm_outline.c)."""
    cache = os.path.join(OUT, "cache-" + os.path.basename(path))
    p = subprocess.run([FUSEC, "--target=cpu", f"--cache-dir={cache}", *extra, path],
                       capture_output=True, text=True, timeout=600, env=fusec_env())
    names = set()
    for entry in glob.glob(os.path.join(cache, "e-*.bin")) if p.returncode == 0 else []:
        with open(entry, "rb") as f:
            names |= set(re.findall(rb"fusec_ool_\w+_v\d+", f.read()))
    return names


def check_bits(dtype, extra=()):
    ops = UNARY + BINARY
    tag = dtype + "".join(extra)
    path = write(f"bits_{tag}.fuse", bits_program(dtype, ops))
    rng = np.random.default_rng(29)
    n = 1027  # a scalar remainder after any vector loop
    files = []
    for name in ("x", "y"):
        p = os.path.join(OUT, f"{tag}_{name}.npy")
        np.save(p, special_inputs(n, rng, dtype))
        files.append((name, p))
    copies = vector_copies(path, extra)
    check(len(copies) >= 8, f"{tag}: big calls {len(copies)} vector copies of math functions "
          f"(at least 8 expected): {sorted(copies)}")
    outs = [os.path.join(OUT, f"{tag}_big{i}.npy") for i in range(len(ops) + 1)]
    rc, err = fusec_run(path, "big", files, outs, "cpu", extra)
    check(rc == 0, f"{tag}: big: exit {rc}: {err.strip()[-400:]}")
    if rc != 0:
        return
    for i, op in enumerate(ops):
        small = os.path.join(OUT, f"{tag}_s{i}.npy")
        rc, err = fusec_run(path, f"s{i}", files, [small], "cpu", extra)
        check(rc == 0, f"{tag}: {op} alone: exit {rc}: {err.strip()[-400:]}")
        if rc == 0:
            a, b = np.load(outs[i]), np.load(small)
            same = same_but_nan_signs(a, b)
            if not same:
                k = int(np.argmax(a.tobytes() != b.tobytes()) if a.shape != b.shape else
                        np.flatnonzero((a != b) & ~(np.isnan(a) & np.isnan(b)))[0])
                print(f"{tag} {op}: at {k}: out of line {a.flat[k]!r}, inline {b.flat[k]!r}")
            check(same, f"{tag}: {op} out of line differs from {op} inline")


for dtype in ("f32", "f16") if QUICK else ("f32", "f64", "f16", "bf16"):
    check_bits(dtype)
if not QUICK:
    check_bits("f32", ("--fast-math",))


def check_against_ref(name, fns, n=1003):
    path = os.path.join(OUT, name + ".fuse")
    rng = np.random.default_rng(7)
    dtype = "f64" if "f64" in name else "f32"
    x = rng.uniform(-2, 2, size=n).astype(np.float64 if dtype == "f64" else np.float32)
    files = [("x", os.path.join(OUT, name + "_x.npy"))]
    np.save(files[0][1], x)
    if "d" in fns:
        files.append(("dy", os.path.join(OUT, name + "_dy.npy")))
        np.save(files[1][1], np.ones_like(x))
    for fn in fns:
        got, ref = [os.path.join(OUT, f"{name}_{fn}_{t}.npy") for t in ("cpu", "ref")]
        args = files if fn == "d" else files[:1]
        rc1, err1 = fusec_run(path, fn, args, [got], "cpu")
        rc2, err2 = fusec_run(path, fn, args, [ref], "ref")
        check(rc1 == 0 and rc2 == 0, f"{name}:{fn}: exit {rc1} {rc2}: {err1[-300:]} {err2[-300:]}")
        if rc1 == 0 and rc2 == 0:
            ok, why = close(np.load(got), np.load(ref), dtype)
            check(ok, f"{name}:{fn} against the reference: {why}")


check_against_ref("sin150_grad", ["f", "d"])
check_against_ref("erf150_f64_grad", ["f", "d"])
if not QUICK:
    check_against_ref("where100_grad", ["f"])
finish()
