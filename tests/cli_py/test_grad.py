"""tests/cli_py/test_grad.py: gradients (SPEC §1, "Gradients": `fn d = grad(f)`).

1. Every differentiable op, read from ir/ops.def (so a new op is tested as soon as it is
   added), and the operators, reductions, broadcasts and selects: the gradient of a one-op f64
   function on the reference interpreter against central finite differences of the function
   itself (directional: <grad, v> against (L(x + hv) - L(x - hv)) / 2h, L = sum(dy * f(x)),
   for random directions v), at random interior points of each op's domain; then the f32
   version of the same gradient on FUSEC_TEST_TARGET (default cpu; cuda: the GPU, or the
   emulated one in ctest's emu.grad), fused and --no-fuse, against the reference.
2. The conventions at non-differentiable points, exactly: relu and abs at 0, minimum and
   maximum ties (halved), clamp at its bounds, max/min reductions over ties (shared evenly),
   where (the branch taken), prod over zeros, pow at 0.
3. The functions of tests/programs/grad.fuse (GELU, bias+ReLU, softmax, layernorm, rmsnorm,
   logsumexp, several results, f16, the gradient of a gradient, a per-row cross-entropy
   declared f32[R] and its second derivative) against torch.autograd where
   PyTorch is installed: the reference to 1e-6 of torch in f64 (what its stored f32 values
   round); the target within SPEC §5's bound plus four times what torch's own f32 backward is off by (a backward in f32 cancels
   where f64 does not: layernorm's dx, a second derivative), fused and --no-fuse.
FUSEC_CPU_TEST_FUSED_ONLY=1 (the sanitizers' pass, the emulated GPU) skips --no-fuse on the target.
FUSEC_TEST_JOBS=N checks N cases at once (tests/cli_py/fusectest.py): each case's random values are
drawn first, in order, so they stay the seed's.
"""
import os
import re
import sys

sys.path.insert(0, os.path.dirname(__file__))
from fusectest import (SRC, check, close, finish, fusec_run, in_shard, later, np,  # noqa: E402
                       progress, target_or_skip, tmpdir)

TARGET = target_or_skip()
MODES = ((),) if os.environ.get("FUSEC_CPU_TEST_FUSED_ONLY") == "1" else ((), ("--no-fuse",))
OUT = tmpdir()
rng = np.random.default_rng(2024)
R, C = 5, 7

# ---- the ops ----------------------------------------------------------------------------------


def builtin_ops():
    """(name, arity) of every built-in element-wise op with a gradient to check, from ops.def:
    float functions and numeric ones, not predicates (bool results), not rand."""
    with open(os.path.join(SRC, "ir", "ops.def")) as f:
        text = f.read()
    ops = []
    for m in re.finditer(r'^IR_OP\((\w+), IR_CLASS_EW, (\d), "(\w+)", ([^,]+),', text, re.M):
        flags = m.group(4)
        if "BUILTIN" not in flags or "PRED" in flags or "RANDOM" in flags or "SELECT" in flags:
            continue
        ops.append((m.group(3), int(m.group(2))))
    return ops


# each op's domain, per operand: where it is smooth and far from its edges
DOMAIN = {"log": [(0.5, 3)], "log2": [(0.5, 3)], "log10": [(0.5, 3)], "sqrt": [(0.5, 3)],
          "rsqrt": [(0.5, 3)], "log1p": [(-0.5, 2)], "asin": [(-0.8, 0.8)],
          "acos": [(-0.8, 0.8)], "atanh": [(-0.8, 0.8)], "acosh": [(1.2, 3)],
          "tan": [(-1.2, 1.2)], "pow": [(0.5, 2), (-2, 2)]}


def sample(op, i, shape):
    """Values for operand i of op: its domain, away from 0 (kinks of abs, relu, sign), from
    integers and half-integers (floor, round ...), and, for fmod, from multiples of b."""
    if op in DOMAIN:
        lo, hi = DOMAIN[op][min(i, len(DOMAIN[op]) - 1)]
        return rng.uniform(lo, hi, size=shape)
    x = rng.uniform(-2, 2, size=shape)
    if True:
        x = np.where(np.abs(x) < 0.1, 0.1 * np.sign(x) + 0.05, x)
        frac = x - np.floor(x)
        x = x + np.where(np.abs(frac - 0.5) < 0.1, 0.2, 0) + np.where(frac < 0.1, 0.15, 0) \
            - np.where(frac > 0.9, 0.15, 0)
    return x


OPERATORS = {"add": "a + b", "sub": "a - b", "mul": "a * b", "div": "a / b", "mod": "a % b",
             "neg": "-a"}
REDUCTIONS = ("sum", "mean", "prod", "max", "min")


def cases():
    """(tag, params [(name, dims)], result dims, body)"""
    out = []
    full = ["R", "C"]
    for name, arity in builtin_ops():
        ps = [("abc"[i], full) for i in range(arity)]
        out.append((name, ps, full, "%s(%s)" % (name, ", ".join("abc"[:arity]))))
    for name, expr in OPERATORS.items():
        ps = [("a", full)] + ([("b", full)] if "b" in expr else [])
        out.append((name, ps, full, expr))
    for red in REDUCTIONS:
        out.append((red + "_rows", [("a", full)], ["R", "1"], "%s(a, axis=1)" % red))
        out.append((red + "_cols", [("a", full)], ["1", "C"], "%s(a * a, axis=0)" % red))
        out.append((red + "_all", [("a", full)], [], "%s(exp(a))" % red))
    out.append(("broadcast", [("a", full), ("b", ["C"]), ("s", [])], full, "a * b + s * a"))
    out.append(("where", [("a", full), ("b", full)], full, "where(a > b, a * 2.0, b * b)"))
    out.append(("ternary", [("a", full), ("b", full)], full, "a > 0.0 ? exp(a) : b * a"))
    out.append(("chain", [("a", full), ("b", ["R", "1"])], full,
                "tanh(a - max(a, axis=1)) * sigmoid(b) + log(sum(exp(a), axis=1))"))
    return out


def shape_of(dims):
    return tuple({"R": R, "C": C}.get(d, 1) if not d.isdigit() else int(d) for d in dims)


def program(tag, params, rdims, body, dtype):
    sig = ", ".join("%s: %s[%s]" % (n, dtype, ", ".join(d)) for n, d in params)
    return ("fn f(%s) -> %s[%s] {\n    return %s;\n}\nfn d = grad(f);\n"
            % (sig, dtype, ", ".join(rdims), body))


def write(name, text):
    p = os.path.join(OUT, name)
    with open(p, "w") as f:
        f.write(text)
    return p


def save(name, a):
    p = os.path.join(OUT, name + ".npy")
    np.save(p, a)
    return p


def run(path, fn, ins, nout, target, extra=(), tag=""):
    """fn's results on target; its files named by tag (a case's own: cases run at once)."""
    outs = [os.path.join(OUT, "%s_out%d.npy" % (tag, i)) for i in range(nout)]
    rc, err = fusec_run(path, fn, [(n, save("%s_in_%s" % (tag, n), a)) for n, a in ins], outs,
                        target, extra)
    if rc != 0:
        return None, err
    return [np.load(o).astype(np.float64) for o in outs], ""


def inputs(tag, params):
    op = tag if tag in DOMAIN or tag in dict(builtin_ops()) else None
    ins = []
    for i, (n, dims) in enumerate(params):
        x = sample(op, i, shape_of(dims)) if op else sample("", i, shape_of(dims))
        if tag == "mod" and n == "b":
            x = rng.uniform(0.7, 1.5, size=shape_of(dims)) * rng.choice([-1, 1], shape_of(dims))
        ins.append((n, x))
    if tag == "mod":  # a = b * (k + a fraction away from 0 and 1)
        b = ins[1][1]
        k = rng.integers(-3, 4, size=b.shape)
        ins[0] = ("a", b * (k + np.sign(k + 0.5) * rng.uniform(0.3, 0.7, size=b.shape)))
    if tag == "clamp":  # lo < hi, x anywhere around them, never on them
        lo = rng.uniform(-1.5, -0.2, size=shape_of(params[1][1]))
        ins[1] = ("b", lo)
        ins[2] = ("c", lo + rng.uniform(0.5, 2, size=lo.shape))
    return ins


_cases = [0]


def later_in_shard(fn, *args):
    """later(fn, *args) when the next case is this run's (FUSEC_TEST_SHARD; every case's inputs
    are drawn all the same, so that each case keeps its values in every split)."""
    k = _cases[0]
    _cases[0] += 1
    if in_shard(k):
        later(fn, *args)


def check_op(tag, params, rdims, body):
    """Draws the inputs, the cotangent and the directions (in this order), then hands the
    runs to later()."""
    ins = inputs(tag, params)
    dy = rng.uniform(-1, 1, size=shape_of(rdims))
    dirs = [[rng.uniform(-1, 1, size=x.shape) for k in range(2)] for _, x in ins]
    later_in_shard(check_op_runs, tag, params, rdims, body, ins, dy, dirs)


def check_op_runs(tag, params, rdims, body, ins, dy, dirs):
    """Finite differences on the reference (f64), then the target against the reference."""
    progress(tag)
    path = write(tag + ".fuse", program(tag, params, rdims, body, "f64"))
    grads, err = run(path, "d", ins + [("dy", dy)], len(params), "ref", tag=tag)
    if grads is None:
        check(False, "%s: the gradient on the reference failed: %s" % (tag, err))
        return

    def loss(xs):
        y, err = run(path, "f", xs, 1, "ref", tag=tag)
        return float(np.sum(dy * y[0])) if y else np.nan

    h = 1e-6
    for i, (n, x) in enumerate(ins):
        for k in range(2):
            v = dirs[i][k]
            plus = [(m, a + h * v if j == i else a) for j, (m, a) in enumerate(ins)]
            minus = [(m, a - h * v if j == i else a) for j, (m, a) in enumerate(ins)]
            fd = (loss(plus) - loss(minus)) / (2 * h)
            an = float(np.sum(grads[i] * v))
            scale = float(np.sum(np.abs(grads[i] * v))) + 1e-6
            check(abs(fd - an) <= 1e-6 * scale + 1e-8,
                  "%s: d/d%s along a random direction: finite differences %.9g, grad %.9g"
                  % (tag, n, fd, an))
    # the same in f32 on the target, fused and --no-fuse, against the f32 reference
    path32 = write(tag + "32.fuse", program(tag, params, rdims, body, "f32"))
    ins32 = [(n, a.astype(np.float32)) for n, a in ins] + [("dy", dy.astype(np.float32))]
    want, err = run(path32, "d", ins32, len(params), "ref", tag=tag)
    for extra in MODES:
        got, err = run(path32, "d", ins32, len(params), TARGET, extra, tag=tag)
        if got is None or want is None:
            check(False, "%s on %s %s: %s" % (tag, TARGET, " ".join(extra), err))
            continue
        for i in range(len(params)):
            # a reduction's gradient sums over many elements: the reduction's allowance
            extra_tol = 1e-5 * np.abs(want[i]).max() if "_" in tag or tag == "broadcast" else 0
            ok, why = close(got[i], want[i], "f32", extra=extra_tol)
            check(ok, "%s on %s %s: d/d%s: %s" % (tag, TARGET, " ".join(extra), params[i][0],
                                                 why))


for case in cases():
    check_op(*case)

# ---- non-differentiable points ------------------------------------------------------------------

KINKS = [
    # (signature, body, inputs, dy, expected gradients): PyTorch's conventions (SPEC §1)
    ("a: f32[N]", "relu(a)", [("a", [0.0, -1.0, 2.0])], [1, 1, 1], [[0, 0, 1]]),
    ("a: f32[N]", "abs(a)", [("a", [0.0, -1.0, 2.0])], [1, 1, 1], [[0, -1, 1]]),
    ("a: f32[N], b: f32[N]", "maximum(a, b)", [("a", [1.0, 2.0, 3.0]), ("b", [1.0, 1.0, 4.0])],
     [2, 2, 2], [[1, 2, 0], [1, 0, 2]]),
    ("a: f32[N], b: f32[N]", "minimum(a, b)", [("a", [1.0, 2.0, 3.0]), ("b", [1.0, 1.0, 4.0])],
     [2, 2, 2], [[1, 0, 2], [1, 2, 0]]),
    ("a: f32[N], lo: f32[N], hi: f32[N]", "clamp(a, lo, hi)",
     [("a", [0.0, 1.0, 0.5, -3.0]), ("lo", [0.0, 0.0, 0.0, 0.0]), ("hi", [1.0, 1.0, 1.0, 1.0])],
     [2, 2, 2, 2], [[1, 1, 2, 0], [1, 0, 0, 2], [0, 1, 0, 0]]),
    ("a: f32[R, C]", "max(a, axis=1)", [("a", [[1.0, 3.0, 3.0, 2.0], [5.0, 5.0, 5.0, 5.0]])],
     [[4], [4]], [[[0, 2, 2, 0], [1, 1, 1, 1]]]),
    ("a: f32[R, C]", "min(a, axis=1)", [("a", [[1.0, 3.0, 1.0, 2.0], [5.0, 4.0, 5.0, 6.0]])],
     [[4], [4]], [[[2, 0, 2, 0], [0, 4, 0, 0]]]),
    ("a: f32[N], b: f32[N]", "where(a > b, a * 3.0, b * 5.0)",
     [("a", [1.0, 2.0, 2.0]), ("b", [0.0, 2.0, 3.0])], [1, 1, 1], [[3, 0, 0], [0, 5, 5]]),
    ("a: f32[R, C]", "prod(a, axis=1)", [("a", [[2.0, 0.0, 3.0], [0.0, 0.0, 3.0]])],
     [[1], [1]], [[[0, 6, 0], [0, 0, 0]]]),
    ("a: f32[N], b: f32[N]", "pow(a, b)", [("a", [0.0, 0.0]), ("b", [2.0, 0.0])], [1, 1],
     [[0, 0], [0, 0]]),
    ("a: f32[N]", "floor(a) + sign(a) + round(a)", [("a", [0.5, -1.5, 2.0])], [1, 1, 1],
     [[0, 0, 0]]),
]

def check_kink(k, sig, body, ins, dy, want):
    progress("kink %d: %s" % (k, body))
    rdims = "R, 1" if "axis=1" in body else "N"
    path = write("kink%d.fuse" % k, "fn f(%s) -> f32[%s] {\n    return %s;\n}\nfn d = grad(f);\n"
                 % (sig, rdims, body))
    arrs = [(n, np.array(a, np.float32)) for n, a in ins] + [("dy", np.array(dy, np.float32))]
    for target in ("ref", TARGET):
        got, err = run(path, "d", arrs, len(ins), target, tag="kink%d" % k)
        if got is None:
            check(False, "%s on %s: %s" % (body, target, err))
            continue
        for i, w in enumerate(want):
            check(np.array_equal(got[i], np.array(w, np.float64)),
                  "%s on %s: d/d%s is %s, want %s" % (body, target, ins[i][0], got[i].tolist(), w))


for k, kink in enumerate(KINKS):
    later_in_shard(check_kink, k, *kink)

# ---- the examples against torch.autograd ----------------------------------------------------------

try:
    import torch
except ImportError:
    torch = None
    print("PyTorch is not installed: the examples are not compared with torch.autograd")

GRAD_FUSE = os.path.join(SRC, "tests", "programs", "grad.fuse")


def torch_fns():
    F = torch.nn.functional

    def gelu(x):
        return 0.5 * x * (1.0 + torch.tanh(0.7978845608028654 * (x + 0.044715 * x * x * x)))

    def layernorm(x, w, b):
        return F.layer_norm(x, (x.shape[-1],), w, b, 1e-5)

    def rmsnorm(x, w):
        return x * torch.rsqrt((x * x).mean(1, keepdim=True) + 1e-6) * w

    def stats(x, s):
        return (x * s).sum(1, keepdim=True), None, x * x

    def dgelu(x, dy):  # gelu's gradient, differentiable again
        x = x.requires_grad_(True) if not x.requires_grad else x
        (g,) = torch.autograd.grad(gelu(x), x, dy, create_graph=True)
        return g

    def xent(x, t):  # a per-row loss, [R]
        return (t * (torch.logsumexp(x, 1, keepdim=True) - x)).sum(1)

    def dxent(x, t, dy):
        x = x.requires_grad_(True) if not x.requires_grad else x
        (g,) = torch.autograd.grad(xent(x, t), x, dy, create_graph=True)
        return g

    return {
        "gelu": (gelu, ["x"]), "bias_relu": (lambda x, b: torch.relu(x + b), ["x", "b"]),
        "softmax": (lambda x: torch.softmax(x, 1), ["x"]),
        "layernorm": (layernorm, ["x", "w", "b"]), "rmsnorm": (rmsnorm, ["x", "w"]),
        "logsumexp": (lambda x: torch.logsumexp(x, 1, keepdim=True), ["x"]),
        "stats": (stats, ["x", "s"]), "scale16": (lambda x, w: x * w + torch.sin(x), ["x", "w"]),
        "dgelu": (dgelu, ["x", "dy"]), "xent": (xent, ["x", "t"]),
        "dxent": (dxent, ["x", "t", "dy"]),
    }


SHAPES = {"x": (R, C), "b": (C,), "w": (C,), "s": (), "dy": (R, C), "t": (R, C)}
# gradient: (function, wrt) as grad.fuse declares them
GRADS = {"dgelu": ("gelu", None), "d2gelu": ("dgelu", ["x"]), "dbias_relu": ("bias_relu", None),
         "dsoftmax": ("softmax", None), "dlayernorm": ("layernorm", None),
         "dlayernorm_x": ("layernorm", ["x"]), "drmsnorm": ("rmsnorm", None),
         "dlogsumexp": ("logsumexp", None), "dstats": ("stats", ["x", "s"]),
         "dscale16": ("scale16", None), "dxent": ("xent", ["x"]), "d2xent": ("dxent", ["x"])}


def torch_grad(fns, fname, wrt, vals, dys, dtype):
    fn, names = fns[fname]
    ts = {n: torch.tensor(vals[n], dtype=dtype, requires_grad=True) for n in names}
    out = fn(*[ts[n] for n in names])
    outs = out if isinstance(out, tuple) else (out,)
    pairs = [(o, torch.tensor(d, dtype=dtype)) for o, d in zip(outs, dys) if o is not None]
    gs = torch.autograd.grad([o for o, _ in pairs], [ts[n] for n in wrt],
                             [d for _, d in pairs], allow_unused=True)
    return [np.zeros(vals[n].shape) if g is None else g.detach().double().numpy()
            for g, n in zip(gs, wrt)]


def check_against_torch(dname, wrt, ins, want64, want32, f16):
    """The gradient dname of grad.fuse on the reference and the target against torch's."""
    progress(dname)
    for target, extras in (("ref", ((),)), (TARGET, MODES)):
        for extra in extras:
            got, err = run(GRAD_FUSE, dname, ins, len(wrt), target, extra, tag=dname)
            what = "%s on %s %s" % (dname, target, " ".join(extra))
            if got is None:
                check(False, "%s: %s" % (what, err))
                continue
            for i, n in enumerate(wrt):
                w = want64[i].reshape(got[i].shape)
                if f16:  # in f16: a unit of f16 either side
                    ok, why = close(got[i], w, "f16")
                elif target == "ref":  # f64 inside; stored values rounded to f32
                    ok, why = close(got[i], w, "f32", rel=1e-6, abs_=1e-8)
                else:
                    err32 = np.abs(want32[i].reshape(w.shape) - w)
                    ok, why = close(got[i], w, "f32", extra=4 * err32 + 1e-6)
                check(ok, "%s: d/d%s against torch.autograd: %s" % (what, n, why))


if torch is not None:
    fns = torch_fns()
    for dname, (fname, wrt) in GRADS.items():
        names = fns[fname][1]
        wrt = wrt or names
        f16 = fname == "scale16"
        flat = fname in ("gelu", "scale16", "dgelu")  # their parameters are [N]
        shp = dict(SHAPES, x=(R * C,) if flat else (R, C), w=(R * C,) if f16 else (C,),
                   dy=(R,) if fname == "dxent" else (R * C,))
        dt = np.float16 if f16 else np.float32
        # values the dtype holds exactly: torch in f64 sees what fusec reads
        vals = {n: rng.uniform(-2, 2, size=shp[n]).astype(dt).astype(np.float64) for n in names}
        rshapes = {"stats": [(R, 1), (R, 1), (R, C)], "logsumexp": [(R, 1)],
                   "xent": [(R,)]}.get(fname, [shp["x"]])
        dys = [rng.uniform(-1, 1, size=s).astype(dt).astype(np.float64) for s in rshapes]
        if fname == "stats":
            dys[1] = rng.integers(-3, 3, size=(R, 1))  # an i64 result's cotangent: ignored
        want64 = torch_grad(fns, fname, wrt, vals, dys, torch.float64)
        want32 = torch_grad(fns, fname, wrt, {n: v.astype(np.float32) for n, v in vals.items()},
                            [d.astype(np.float32) for d in dys], torch.float32)
        dynames = ["dy"] if len(dys) == 1 else ["dy%d" % i for i in range(len(dys))]
        if fname in ("dgelu", "dxent"):
            dynames = ["dy_"]
        ins = [(n, vals[n].astype(dt)) for n in names] + [
            (n, d.astype(np.int64 if fname == "stats" and i == 1 else dt))
            for i, (n, d) in enumerate(zip(dynames, dys))]
        later_in_shard(check_against_torch, dname, wrt, ins, want64, want32, f16)

finish()
