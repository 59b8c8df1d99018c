"""tests/cli_py/deepprog.py: the deep programs that test_deep_programs.py (the CPU target) and
test_cuda_deep.py (NVRTC, the emulated GPU) build and run: kernels that hold so much math that
the code generators call it out of line (codegen/cpu/llvm_outline.c, codegen/cuda/
cuda_outline.c), and the checks that this changes no result."""
import os
import resource
import sys

sys.path.insert(0, os.path.dirname(__file__))
from fusectest import check, close, fusec_run, np, run, same_but_nan_signs  # noqa: E402

# the programs bench/compile_time.py times
sys.path.insert(0, os.path.join(os.path.dirname(os.path.abspath(__file__)), "..", "..", "bench"))
from compile_time import program  # noqa: E402

DEEP = {
    "sin150_grad": program("chain", "sin", 150, "f32", True),
    "exp300": program("chain", "exp", 300, "f32", False),
    "erf150_f64_grad": program("chain", "erf", 150, "f64", True),
    "independent_sin150_grad": program("independent", "sin", 150, "f32", True),
    "where100_grad": program("where", "sin", 100, "f32", True),
    # 100 dependent row softmaxes and their gradient: fused without a bound, kernels of 16
    # levels each recompute every level below (11.5 s on the CPU, over 60 s through NVRTC);
    # at most PASS_MAX_KERNEL_LEVELS levels a kernel, identical kernels compiled once
    "rows100_grad": program("rows", "exp", 100, "f32", True),
}

# uses of each function in the big kernel: enough that, the heavier functions out of line, the
# lightest (20 instructions) and the always inline sqrt and rsqrt (5) still exceed the budget
COPIES = 30

UNARY = ["exp", "exp2", "expm1", "log", "log2", "log10", "log1p", "sqrt", "rsqrt", "sin", "cos",
         "tan", "asin", "acos", "atan", "sinh", "cosh", "tanh", "asinh", "acosh", "atanh", "erf",
         "sigmoid"]
BINARY = ["pow", "atan2", "hypot", "%"]


def compile_cpu_seconds(args):
    """CPU seconds (user + system) of `fusec ARGS` (a cold build); None if it fails."""
    before = resource.getrusage(resource.RUSAGE_CHILDREN)
    rc, _, err = run(list(args))
    after = resource.getrusage(resource.RUSAGE_CHILDREN)
    if rc != 0:
        print(err[-2000:])
        return None
    return (after.ru_utime - before.ru_utime) + (after.ru_stime - before.ru_stime)


def write(out, name, text):
    path = os.path.join(out, name)
    with open(path, "w") as f:
        f.write(text)
    return path


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
    """`smalls`: every op once as a result, run with --no-fuse (each op its own small kernel:
    inlined); and `big`: every op once as a result, and each COPIES - 1 times more in a
    filler result, fused (one kernel over the budget: called out of line)."""
    t = f"{dtype}[N]"
    terms = [expr(op, f"(x * {1 + k / 64})", "y") for op in ops for k in range(1, COPIES)]
    body = ["    let z0 = " + terms[0] + ";"]
    body += [f"    let z{k} = z{k - 1} + {term};" for k, term in enumerate(terms[1:], 1)]
    results = ", ".join(expr(op, "x", "y") for op in ops)
    src = [f"fn smalls(x: {t}, y: {t}) -> ({', '.join([t] * len(ops))}) {{",
           f"    return {results};", "}"]
    src.append(f"fn big(x: {t}, y: {t}) -> ({', '.join([t] * (len(ops) + 1))}) {{")
    src += body + [f"    return {results}, z{len(terms) - 1};", "}"]
    return "\n".join(src) + "\n"


def bits_inputs(out, tag, dtype):
    """x and y for the bits program: NaN, infinities, zeros, subnormals, huge values, at a size
    that leaves a scalar remainder after any vector loop; [(name, .npy path)]."""
    rng = np.random.default_rng(29)
    files = []
    for name in ("x", "y"):
        p = os.path.join(out, f"{tag}_{name}.npy")
        np.save(p, special_inputs(1027, rng, dtype))
        files.append((name, p))
    return files


def check_bits_run(out, tag, path, ops, files, target, extra=()):
    """`big` (every op out of line) on target gives each op's very bits as `smalls` (inline)."""
    outs = [os.path.join(out, f"{tag}_big{i}.npy") for i in range(len(ops) + 1)]
    rc, err = fusec_run(path, "big", files, outs, target, extra)
    check(rc == 0, f"{tag}: big: exit {rc}: {err.strip()[-400:]}")
    smalls = [os.path.join(out, f"{tag}_small{i}.npy") for i in range(len(ops))]
    rc2, err = fusec_run(path, "smalls", files, smalls, target, (*extra, "--no-fuse"))
    check(rc2 == 0, f"{tag}: smalls: exit {rc2}: {err.strip()[-400:]}")
    if rc != 0 or rc2 != 0:
        return
    for i, op in enumerate(ops):
        a, b = np.load(outs[i]), np.load(smalls[i])
        same = same_but_nan_signs(a, b)
        if not same:
            k = int(np.argmax(a.tobytes() != b.tobytes()) if a.shape != b.shape else
                    np.flatnonzero((a != b) & ~(np.isnan(a) & np.isnan(b)))[0])
            print(f"{tag} {op}: at {k}: out of line {a.flat[k]!r}, inline {b.flat[k]!r}")
        check(same, f"{tag}: {op} out of line differs from {op} inline")


def check_against_ref(out, name, fns, target, n=1003):
    """The deep program `name` (written to out first) on target against --target=ref."""
    path = write(out, name + ".fuse", DEEP[name])
    rng = np.random.default_rng(7)
    dtype = "f64" if "f64" in name else "f32"
    shape = (7, 143) if name.startswith("rows") else n  # f32[R, C]: odd rows and columns
    x = rng.uniform(-2, 2, size=shape).astype(np.float64 if dtype == "f64" else np.float32)
    files = [("x", os.path.join(out, name + "_x.npy"))]
    np.save(files[0][1], x)
    if "d" in fns:
        files.append(("dy", os.path.join(out, name + "_dy.npy")))
        np.save(files[1][1], np.ones_like(x))
    for fn in fns:
        got, ref = [os.path.join(out, f"{name}_{fn}_{t}.npy") for t in (target, "ref")]
        args = files if fn == "d" else files[:1]
        rc1, err1 = fusec_run(path, fn, args, [got], target)
        rc2, err2 = fusec_run(path, fn, args, [ref], "ref")
        check(rc1 == 0 and rc2 == 0, f"{name}:{fn}: exit {rc1} {rc2}: {err1[-300:]} {err2[-300:]}")
        if rc1 == 0 and rc2 == 0:
            ok, why = close(np.load(got), np.load(ref), dtype)
            check(ok, f"{name}:{fn} against the reference: {why}")
