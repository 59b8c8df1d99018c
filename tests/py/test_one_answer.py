"""tests/py/test_one_answer.py: the CUDA target gives the CPU target's bits (SPEC §5, "one answer,
bit for bit") for every element-wise float op: each transcendental is the one implementation
both code generators use (codegen/cpu/llvm_math.c, codegen/plan_math.h), with the same fused
multiply-adds and nothing else contracted (NVRTC's --fmad=false), and the other ops are one
IEEE operation, or exact, on both.

Each op of f32 runs fused on the CUDA target (FUSEC_TEST_TARGET=cuda: a GPU, or the emulated
one) and on the CPU target of this host over the same inputs: random values of every
magnitude (a uniform pick of exponents, both signs), the special values (zeros, infinities,
NaN, subnormals, the ends of each function's domain), and a chain of ops (GELU and a few
compositions); a mismatch names the op, the input and both bit patterns. NaN compares equal to
NaN whatever its payload (x86 keeps an operand's, a GPU makes its own). f64 is the same for the
functions the library implements itself; those that call the C library (sin, cos, tan, asin,
acos, atan, atan2, pow, hypot in f64) are each target's own and not compared. Reductions are
not here: CUDA's do not follow the plan's order yet (issue 30). Without CUDA (no GPU, no
emulated one), skipped.

On a GPU machine, which has no CPU target (the bundle is built without LLVM), the CPU's
results come from FUSEC_ONE_ANSWER_CPU=DIR, written here by `test_one_answer.py --write DIR`
(make gpu-bundle does it): the inputs and the CPU target's outputs of every case."""
import os
import sys

sys.path.insert(0, os.path.dirname(__file__))
from fusectest import check, finish, fusec_run, np, target_or_skip, tmpdir  # noqa: E402

WRITE = sys.argv[2] if len(sys.argv) == 3 and sys.argv[1] == "--write" else None
SAVED = os.environ.get("FUSEC_ONE_ANSWER_CPU")
if WRITE:
    os.makedirs(WRITE, exist_ok=True)
elif os.environ.get("FUSEC_TEST_TARGET", "cpu") != "cuda":
    print("FUSEC_TEST_TARGET is not cuda: nothing to compare the CPU with; skipping")
    sys.exit(77)
else:
    target_or_skip()
OUT = tmpdir()
rng = np.random.default_rng(20261127)

UNARY = ["exp", "exp2", "expm1", "log", "log2", "log10", "log1p", "sqrt", "rsqrt", "sin",
         "cos", "tan", "asin", "acos", "atan", "sinh", "cosh", "tanh", "asinh", "acosh",
         "atanh", "erf", "sigmoid", "relu", "abs", "sign", "floor", "ceil", "round", "trunc"]
BINARY = ["pow", "atan2", "hypot", "copysign", "minimum", "maximum"]
OPERATORS = {"add": "+", "sub": "-", "mul": "*", "div": "/", "mod": "%"}
LIBM_F64 = {"sin", "cos", "tan", "asin", "acos", "atan", "atan2", "pow", "hypot"}
COMPOSED = {
    "gelu": "0.5 * x * (1.0 + tanh(0.7978845608 * (x + 0.044715 * x * x * x)))",
    "softplus": "log1p(exp(-abs(x))) + relu(x)",
    "mixed": "sqrt(abs(x)) * sin(x) + exp(-x * x) / (1.0 + y * y) - atan2(y, x)",
    "shifted": "exp(x - 3.0) * cosh(y / 8.0) + log(1.0 + abs(y))",
}


def ops_of(t):
    """(name, function, its expressions, its parameters) of dtype t: one function for the
    unary ops, one for the binary ones and the operators, one for the compositions, each
    result one op (so a few processes compare every op, in one fused kernel each)."""
    lib = (lambda op: t == "f32" or op not in LIBM_F64)
    un = [(op, f"{op}(x)") for op in UNARY if lib(op)]
    bi = [(op, f"{op}(x, y)") for op in BINARY if lib(op)]
    bi += [(o, f"x {o} y") for o in OPERATORS.values()]
    fns = [("unary", un, ["x"]), ("binary", bi, ["x", "y"])]
    if t == "f32":
        fns.append(("composed", list(COMPOSED.items()), ["x", "y"]))
    return fns


def program(t):
    lines = []
    for name, exprs, params in ops_of(t):
        sig = ", ".join(f"{p}: {t}[N]" for p in params)
        res = ", ".join(f"{t}[N]" for _ in exprs)
        lines.append(f"fn {name}({sig}) -> ({res}) {{\n    return "
                     + ", ".join(e for _, e in exprs) + ";\n}")
    path = os.path.join(OUT, f"ops_{t}.fuse")
    with open(path, "w") as f:
        f.write("\n".join(lines) + "\n")
    return path


def values(dt, n):
    """n values of every magnitude and sign, the special ones first."""
    fi = np.finfo(dt)
    special = [0.0, -0.0, np.inf, -np.inf, np.nan, 1.0, -1.0, 0.5, -0.5, 2.0, 1e-3, -1e-3,
               fi.tiny, -fi.tiny, fi.tiny / 8, fi.max, -fi.max, fi.eps, np.pi, -np.pi,
               88.7, -87.3, -103.9, 89.0, 709.0, -745.0, 10.0, -10.0, 0.9999, -0.9999, 3.92]
    emax = 40 if dt == np.float32 else 60
    mag = np.ldexp(rng.uniform(1, 2, n), rng.integers(-emax, 12, n))
    x = (mag * rng.choice([-1.0, 1.0], n)).astype(dt)
    x[:len(special)] = np.array(special, dtype=np.float64).astype(dt)
    return x


def same(a, b):
    """Bit for bit, NaN against NaN whatever the payload; the first difference or None."""
    u = np.uint32 if a.dtype == np.float32 else np.uint64
    nan = np.isnan(a) & np.isnan(b)
    bad = np.flatnonzero((a.view(u) != b.view(u)) & ~nan)
    return None if bad.size == 0 else int(bad[0])


def run_both(path, fn, key, inputs, tags):
    """fn on both targets (the CPU's from FUSEC_ONE_ANSWER_CPU where set), result i compared as
    op tags[i]; its files are named by key."""
    if SAVED:  # the inputs the CPU's results are of
        inputs = [(name, np.load(os.path.join(SAVED, f"{key}_{name}.npy"))) for name, _ in inputs]
    files = []
    for name, a in inputs:
        p = os.path.join(WRITE or OUT, f"{key}_{name}.npy")
        np.save(p, a)
        files.append((name, p))
    got = {}
    for target in ("cpu",) if WRITE else ("cpu", "cuda"):
        outs = [os.path.join(WRITE or OUT, f"{key}_{target}_{i}.npy") for i in range(len(tags))]
        if target == "cpu" and SAVED:
            got[target] = [np.load(os.path.join(SAVED, f"{key}_cpu_{i}.npy"))
                           for i in range(len(tags))]
            continue
        rc, err = fusec_run(path, fn, files, outs, target)
        check(rc == 0, f"{fn} on {target}: exit {rc}: {err.strip()}")
        if rc != 0:
            return
        got[target] = [np.load(o) for o in outs]
    if WRITE:
        return
    for i, tag in enumerate(tags):
        c, g = got["cpu"][i], got["cuda"][i]
        j = same(c, g)
        if j is None:
            check(True, tag)
            continue
        u = np.uint32 if c.dtype == np.float32 else np.uint64
        args = ", ".join(f"{a[j]!r}" for _, a in inputs)
        n = np.count_nonzero(c.view(u) != g.view(u))
        check(False, f"{tag}: {n} of {c.size} differ; first at ({args}): cpu {c[j]!r} "
                     f"({c.view(u)[j]:#x}), cuda {g[j]!r} ({g.view(u)[j]:#x})")


N = 4001
for t, dt in (("f32", np.float32), ("f64", np.float64)):
    path = program(t)
    x, y = values(dt, N), values(dt, N)[::-1].copy()
    small = rng.uniform(-6, 6, N).astype(dt)
    for fn, exprs, params in ops_of(t):
        ins = [("x", x), ("y", y)] if fn != "composed" else [("x", small),
                                                             ("y", small[::-1].copy())]
        run_both(path, fn, f"{fn}_{t}", ins[:len(params)], [f"{e} {t}" for e, _ in exprs])

finish()
