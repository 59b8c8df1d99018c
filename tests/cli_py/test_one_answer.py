"""tests/cli_py/test_one_answer.py: the CUDA target gives the CPU target's bits (SPEC §5, "one answer,
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
acos, atan, atan2, pow, hypot in f64) are each target's own and not compared.

Reductions too (docs/plan.md, "The order of a reduction", which both targets follow): sums,
means and products over the last axis, softmax, log-sum-exp and layer normalization, over the
first axis (columns, and batch normalization), and over everything, in f32, f64 and bf16, over
[5, 7] to [3, 4097], and in f32 [1, 229999] and [3000, 40]: rows within one block of 1024, of several, and of more
blocks than a CUDA block has groups of threads (the binary counter); rows of 7 and 1001 are no
whole vectors (the loads' scalar path); columns of 3000 are cut into pieces that a join
combines. On the emulated GPU the long ones run at two grid sizes (1 and 132 SMs: GRIDS), each
against the CPU. Without CUDA (no GPU, no emulated one), skipped.

On a GPU machine, which has no CPU target (the bundle is built without LLVM), the CPU's
results come from FUSEC_ONE_ANSWER_CPU=DIR, written here by `test_one_answer.py --write DIR`
(make gpu-bundle does it): the inputs and the CPU target's outputs of every case."""
import os
import sys

sys.path.insert(0, os.path.dirname(__file__))
from fusectest import (bits_differ, check, finish, fusec_run, in_shard, np,  # noqa: E402
                       target_or_skip, tmpdir)

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
    bad = np.flatnonzero(bits_differ(a.reshape(-1), b.reshape(-1)))
    return None if bad.size == 0 else int(bad[0])


CASE = [0]


# On the emulated GPU, the reductions over 100000 elements or more run at a second grid size
# too: the emulated device's SMs (FUSEC_MOCK_SMS) set how many CUDA blocks a kernel launches,
# and so how a long row, a column or a full reduction is cut among them (the tests' 1, where
# every block loops over its work, and an H100's 132; smaller shapes take the same small grid
# at both): the bits must not change (docs/plan.md, "The order of a reduction").
EMULATED = "mock" in os.path.basename(os.environ.get("FUSEC_CUDA_DRIVER", ""))
GRIDS = {"cuda": None, "cuda132": {"FUSEC_MOCK_SMS": "132"}}  # run: its environment


def run_both(path, fn, key, inputs, tags, in_key=None, grids=False):
    """fn on both targets (the CPU's from FUSEC_ONE_ANSWER_CPU where set), result i compared as
    op tags[i]; its files are named by key, its inputs' by in_key (default key: cases of the
    same inputs share their files, which the GPU bundle carries); grids: on the emulated GPU,
    at each of GRIDS' grid sizes. FUSEC_TEST_SHARD=i/n: every n-th case."""
    CASE[0] += 1
    if not in_shard(CASE[0] - 1):
        return
    in_key = in_key or key
    if SAVED:  # the inputs the CPU's results are of
        inputs = [(name, np.load(os.path.join(SAVED, f"{in_key}_{name}.npy")))
                  for name, _ in inputs]
    files = []
    for name, a in inputs:
        p = os.path.join(WRITE or OUT, f"{in_key}_{name}.npy")
        if not os.path.exists(p):
            np.save(p, a)
        files.append((name, p))
    got = {}
    runs = ["cpu"] if WRITE else ["cpu"] + (list(GRIDS) if grids and EMULATED else ["cuda"])
    for run in runs:
        outs = [os.path.join(WRITE or OUT, f"{key}_{run}_{i}.npy") for i in range(len(tags))]
        if run == "cpu" and SAVED:
            got[run] = [np.load(os.path.join(SAVED, f"{key}_cpu_{i}.npy"))
                        for i in range(len(tags))]
            continue
        env = dict(os.environ, **GRIDS[run]) if GRIDS.get(run) else None
        rc, err = fusec_run(path, fn, files, outs, run.rstrip("0123456789"), env=env)
        check(rc == 0, f"{fn} on {run}: exit {rc}: {err.strip()}")
        if rc != 0:
            return
        got[run] = [np.load(o) for o in outs]
    if WRITE:
        return
    for run in runs[1:]:
        for i, tag in enumerate(tags):
            compare(got["cpu"][i], got[run][i], inputs, f"{tag} ({run})")


def compare(c, g, inputs, tag):
    """The CPU's result c against a GPU's g, bit for bit: the first difference named."""
    j = same(c, g)
    if j is None:
        check(True, tag)
        return
    c, g = c.reshape(-1), g.reshape(-1)
    u = {2: np.uint16, 4: np.uint32, 8: np.uint64}[c.dtype.itemsize]
    args = ", ".join(f"{a.reshape(-1)[j]!r}" for _, a in inputs) if all(
        a.size == c.size for _, a in inputs) else f"element {j}"
    n = np.count_nonzero(c.view(u) != g.view(u))
    check(False, f"{tag}: {n} of {c.size} differ; first at ({args}): cpu {c[j]!r} "
                 f"({c.view(u)[j]:#x}), cuda {g[j]!r} ({g.view(u)[j]:#x})")


ROWS = {  # name: (its results' shapes, their expressions) over x: T[R, C]
    "sums": (("R", "R", "R", "R"),
             ("sum(x, axis=1)", "mean(x, axis=1)", "prod(1.0 + x / 64.0, axis=1)",
              "sum(x * x, axis=1) / sum(abs(x), axis=1)")),
    "softmax": (("R, C", "R"),
                ("exp(x - max(x, axis=1)) / sum(exp(x - max(x, axis=1)), axis=1)",
                 "log(sum(exp(x - max(x, axis=1)), axis=1)) + max(x, axis=1)")),
    "norm": (("R, C",),
             ("(x - mean(x, axis=1)) * rsqrt(mean((x - mean(x, axis=1)) * "
              "(x - mean(x, axis=1)), axis=1) + 1e-5)",)),
    # columns (a block of 32 columns, its warps splitting the rows; long columns cut into
    # pieces and joined) and everything (a grid of blocks, then their partials)
    "cols": (("C", "C", "C"),
             ("sum(x, axis=0)", "mean(x * x, axis=0)", "prod(1.0 + x / 64.0, axis=0)")),
    "bnorm": (("R, C",),
              ("(x - mean(x, axis=0)) * rsqrt(mean((x - mean(x, axis=0)) * "
               "(x - mean(x, axis=0)), axis=0) + 1e-5)",)),
    "full": (("", ""), ("sum(x)", "mean(exp(x / 64.0))")),
}


def row_program(t):
    lines = []
    for name, (shapes, exprs) in ROWS.items():
        res = ", ".join(f"{t}[{sh}]" for sh in shapes)
        lines.append(f"fn {name}(x: {t}[R, C]) -> ({res}) {{\n    return "
                     + ", ".join(exprs) + ";\n}")
    path = os.path.join(OUT, f"rows_{t}.fuse")
    with open(path, "w") as f:
        f.write("\n".join(lines) + "\n")
    return path


N = 4001
for t in ("f32", "f64", "bf16"):
    path = row_program(t)
    dt = np.float64 if t == "f64" else np.float32
    # the long rows (the counter) and long columns (the pieces) in f32 and with the functions
    # that reach them only: the layout is the same for every dtype, emulating a thread a fiber
    # is slow, and the GPU bundle carries the CPU's results
    shapes = [((5, 7), ROWS), ((37, 1001), ROWS), ((3, 4097), ROWS)]
    if t == "f32":
        # (a full reduction of 229999 elements takes more CUDA blocks than 1 emulated SM runs
        # at once: at 132 its 14 blocks take runs of 16 blocks of 1024 where 1 SM's 8 take 32,
        # and their partials are three subtrees of the same tree)
        shapes += [((1, 229999), ("sums", "softmax", "full")), ((3000, 40), ("cols", "full"))]
    for (r, c), names in shapes:
        # magnitudes over a few decades, so that another order gives other bits
        x = (rng.standard_normal((r, c)) * np.exp(rng.uniform(-4, 4, (r, c)))).astype(dt)
        for name in names:
            run_both(path, name, f"rows_{name}_{t}_{r}x{c}", [("x", x)],
                     [f"{e} {t} [{x.shape[0]}, {x.shape[1]}]" for e in ROWS[name][1]],
                     in_key=f"rows_{t}_{r}x{c}", grids=r * c >= 100000)

for t, dt in (("f32", np.float32), ("f64", np.float64)):
    path = program(t)
    x, y = values(dt, N), values(dt, N)[::-1].copy()
    small = rng.uniform(-6, 6, N).astype(dt)
    for fn, exprs, params in ops_of(t):
        ins = [("x", x), ("y", y)] if fn != "composed" else [("x", small),
                                                             ("y", small[::-1].copy())]
        run_both(path, fn, f"{fn}_{t}", ins[:len(params)], [f"{e} {t}" for e, _ in exprs])

finish()
