"""tests/cli_py/test_random_programs.py: random .fuse programs, run by the CPU backend (or the GPU:
FUSEC_TEST_TARGET=cuda) fused and --no-fuse, against the reference interpreter on the same
inputs. Each program (two in three over [R, C], one in three over [A, B, C]) mixes
parameters of the full shape and of broadcasting ones ([C], [R, 1], [B, C], [A, 1, C],
[A, B, 1], []) in every dtype (bool and i64 too: i64 values up to 2^40, whose sums and
products wrap), element-wise operators and functions, casts, selects (with bool operators and
bool parameters in their conditions), and reductions (sum, mean, max, min, prod; over
integers exact, to i64) over any set of axes (rows, columns, middle axes, all) whose results
broadcast back into the expression; results of every dtype, bool comparisons among them, later
float results reduced and declared without their reduced axes (`-> f32[R]`), and each
program's gradient (`fn dprog = grad(prog)`). Half the programs read their inputs
through views (`fusec run --in x=FILE.npy.T`: transposed, reversed, every other row,
broadcast with stride 0), each array still the same values. So
fusion and the code generators meet combinations that no hand-written program has.

The oracle. A random expression is often ill-conditioned somewhere (a difference of nearly
equal values, a function near a jump, a cast at a tie), and there SPEC §5 holds only the
pattern of NaN and infinities. So:
- an element is compared only where the reference is stable: its value moves by less than
  an eighth of the tolerance when the f32 and f64 inputs move by 2^-21 (relative), and it is
  finite or not alike with every intermediate rounded to its dtype (the --no-fuse reference
  against the fused one, and back);
- the tolerance is the SPEC's for the precision the result was computed in, widened by eight
  times what rounding every intermediate changed (the target rounds its intermediates too,
  in f32, with math a unit or two off), by a unit of any 16-bit dtype the program uses, and
  by 1e-4 relative where a sum or mean's allowance is carried through, and by eight times a
  float product's (1e-5 + (n - 1) 2^-24 relative);
- a mismatch is confirmed on three larger perturbations (2^-18) before it counts.
The generator keeps small errors from blowing up without bound (exp, sin, cos and pow's
exponent take bounded arguments; floor and round do not meet whole numbers where tanh,
sigmoid and erf saturate; only integers are cast to i32), so what is left is mostly the code
generators' doing: wrong elements, axes, broadcasts, roundings or dtypes. The fused target
is compared with the fused reference and --no-fuse with --no-fuse, which round the same
stored intermediates (SPEC §1). Integer and bool results must be equal where the reference is
stable (also with every intermediate rounded: a comparison of floats may flip there); float
results of programs with i64 inputs past 2^24 are not compared (see Case.large_ints).
Where the target is the CPU and NVRTC is installed, every fifth program's CUDA kernels are
built for sm_90 too (fused and --no-fuse): no GPU is needed for that (NVRTC took two thirds of
this test's time when it built every program; the emulated CUDA run builds them all).

The oracle is conservative, not exact: where a math function's own error (a unit or two,
within the SPEC) meets an amplifying expression that neither check above exposes, an element
can still differ by a little more than the allowance; over thousands of programs about one
in a thousand did, every one of them explained that way. A failure is a program to inspect
(FUSEC_RANDOM_ONLY, FUSEC_RANDOM_KEEP), not yet a bug; the default seed's programs pass.

FUSEC_RANDOM_PROGRAMS sets the number of programs (default 18; 4 with FUSEC_CPU_TEST_QUICK=1,
as under the sanitizers), FUSEC_RANDOM_SEED the seed (default: fixed, so that a failure
reproduces; the failing program is printed), FUSEC_RANDOM_KEEP a directory that keeps every
program and its inputs (p<case>.fuse, c<case>_<param>.npy), FUSEC_RANDOM_ONLY one case's
number to run that case alone. FUSEC_TEST_JOBS=N runs N programs at once (tests/cli_py/fusectest.py:
each program's inputs are drawn first, in order, so the programs and values stay the seed's),
FUSEC_TEST_SHARD=i/n every n-th case from the i-th (each program is drawn, only its shard's run)."""
import os
import sys
import threading

sys.path.insert(0, os.path.dirname(__file__))
from fusectest import (SRC, check, close, finish, fusec_run, in_shard, later, np,  # noqa: E402
                       progress, run, target_or_skip, tmpdir, tolerance, wait_all)

np.seterr(all="ignore")

TARGET = target_or_skip()
# under the sanitizers (FUSEC_CPU_TEST_QUICK, 10x slower) fewer (the plain pass builds many more)
QUICK = os.environ.get("FUSEC_CPU_TEST_QUICK") == "1"
COUNT = int(os.environ.get("FUSEC_RANDOM_PROGRAMS", "4" if QUICK else "18"))
NVRTC_EVERY = 5  # NVRTC builds programs 0, 5, 10, ...: prime to the shard counts, so spread
SEED = int(os.environ.get("FUSEC_RANDOM_SEED", "20261122"))
OUT = os.environ.get("FUSEC_RANDOM_KEEP") or tmpdir()  # a directory to keep the files in
os.makedirs(OUT, exist_ok=True)

NP = {"bool": np.bool_, "i32": np.int32, "i64": np.int64, "f16": np.float16,
      "bf16": np.float32, "f32": np.float32, "f64": np.float64}
FLOATS = ["f32", "f32", "f32", "f64", "f16", "bf16"]
INTS = ("i32", "i64")
# Parameters by rank of the program: (name, declared dims). An expression's shape is a tuple
# of the program's rank (its dims, or 1 where it has none: numpy broadcasting from the right).
PARAMS = {
    2: [("y", ("R", "C")), ("b", ("C",)), ("c", ("R", 1)), ("s", ())],
    3: [("y", ("A", "B", "C")), ("b", ("B", "C")), ("c", ("A", 1, "C")), ("d", ("A", "B", 1)),
        ("s", ())],
}
FULL = {2: ("R", "C"), 3: ("A", "B", "C")}
# a helper function's own dims, one axis fewer than the caller's: the call maps it over the
# caller's first axis (SPEC §1's batch axes), so the helper's axes are the caller's last ones
HELPER_FULL = {1: ("N",), 2: ("M", "N")}


def padded(dims, rank):
    return (1,) * (rank - len(dims)) + tuple(dims)


def decl(dims):
    return "[" + ", ".join(str(d) for d in dims) + "]" if any(d != 1 for d in dims) else "[]"


# Functions that could blow a small error up without bound take bounded arguments (exp, pow's
# exponent, and sin and cos, whose error grows with the argument's size), and floor and round take arguments that are not whole numbers where tanh,
# sigmoid and erf saturate to -1, 0 or 1 (a unit off there would jump a whole step), so that
# what the oracle sees is mostly the code generators' doing.
UNARY = ["exp(2.0 * tanh({}))", "tanh({})", "sigmoid({})", "abs({})", "sqrt(abs({}))",
         "log1p(abs({}))", "sin(4.0 * tanh({}))", "cos(4.0 * tanh({}))", "-{}", "relu({})",
         "erf({})", "atan({})",
         "floor(2.7 * {} + 0.35)", "round(2.7 * {} + 0.35)", "rsqrt(abs({}) + 0.5)",
         "expm1(tanh({}))", "{} * {}"]
INT_UNARY = ("-{}", "abs({})", "{} * {}")  # these keep an integer an integer
BINARY = ["({} + {})", "({} - {})", "({} * {})", "({} / {})", "minimum({}, {})",
          "maximum({}, {})", "({} > {} ? {} : {})", "hypot({}, {})", "atan2({}, {})",
          "where({} < 0.0, {}, {})", "pow(abs({}) + 0.5, 2.0 * tanh({}))",
          "where((({} > {}) && !({} < -1.25)) || {}, {}, {})"]
INT_BINARY = ["({} + {})", "({} - {})", "({} * {})", "({} / {})", "({} % {})",
              "minimum({}, {})", "maximum({}, {})"]
REDUCE = ["sum", "mean", "max", "min", "prod"]
INT_REDUCE = ["sum", "prod", "max", "min"]


def join(a, b):
    """The broadcast shape of two expression shapes."""
    return tuple(y if x == 1 else x for x, y in zip(a, b))


def kjoin(*kinds):
    """The kind of an operation on operands of these kinds ("f", "i32", "i64"), as SPEC §1's
    promotion gives it (a weak integer literal is "i32", which any other integer wins over)."""
    if "f" in kinds:
        return "f"
    return "i64" if "i64" in kinds else "i32"


def kind(dt):
    return dt if dt in INTS or dt == "bool" else "f"


class Gen:
    def __init__(self, rng, rank, full=None, xname="x"):
        self.rng = rng
        self.rank = rank
        self.full = full or FULL[rank]
        self.xname = xname  # the parameter of the full shape
        self.one = (1,) * rank
        self.helper = None  # (name, its parameters' dtypes) of a function expr() may call
        # (name, dtype, shape, declared dims); a let's dtype is its kind's ("f" for a float)
        self.params = []
        self.lets = []
        # rand and argmax/argmin: a generator of their own (None: neither), so that the
        # programs' other choices, and so the suite's programs, are what they were before
        # those existed; rand's seed is an extra parameter, never picked as an operand
        self.rand = None
        self.extra = []
        # later results reduced and declared without their reduced axes: a generator of its
        # own too (None: never)
        self.squeeze = None

    def pick(self, seq):
        return seq[int(self.rng.integers(len(seq)))]

    def bools(self):
        return [(n, s) for n, dt, s, _ in self.params if dt == "bool"]

    def leaf(self):
        e, k, s = self.plain_leaf()
        if self.rand is not None and self.rand.random() < 0.12:
            return f"rand(seed, {e})", "f", s  # a draw over the leaf's shape
        return e, k, s

    def plain_leaf(self):
        r = self.rng.random()
        if r < 0.15:
            lit = self.pick(["0.5", "2.0", "1.5", "3", "0.125", "-1.25"])
            return lit, ("i32" if lit == "3" else "f"), self.one
        name, dt, shape, _ = self.pick(self.params + self.lets)
        if dt == "bool":  # a bool parameter as a number
            if self.rng.random() < 0.5:
                return f"where({name}, 1.5, -0.75)", "f", shape
            dt = self.pick(INTS)
            return f"{dt}({name})", dt, shape
        return name, kind(dt), shape

    def cond(self, depth):
        """A bool operand of && and ||: isnan of an expression, or a bool parameter."""
        bools = self.bools()
        if bools and self.rng.random() < 0.5:
            return self.pick(bools)
        a, _, s = self.expr(depth)
        return f"isnan({a})", s

    def expr(self, depth):
        if depth <= 0 or self.rng.random() < 0.2:
            return self.leaf()
        if self.helper and self.rng.random() < 0.12:
            return self.call(depth)
        r = self.rng.random()
        if r < 0.3:
            a, k, s = self.expr(depth - 1)
            u = self.pick(UNARY)
            return u.format(a, a), (k if u in INT_UNARY and k != "f" else "f"), s
        if r < 0.75:
            a, ka, sa = self.expr(depth - 1)
            b, kb, sb = self.expr(depth - 1)
            if ka != "f" and kb != "f" and self.rng.random() < 0.6:
                return self.pick(INT_BINARY).format(a, b), kjoin(ka, kb), join(sa, sb)
            op = self.pick(BINARY)
            if op.startswith("({} > {} ?"):
                c, kc, sc = self.expr(depth - 1)
                return op.format(a, b, c, a), kjoin(kc, ka), join(join(sa, sb), sc)
            if op.startswith("where((("):  # bool operators, in a condition
                c, kc, sc = self.expr(depth - 1)
                d, sd = self.cond(depth - 1)
                shape = join(join(join(sa, sb), sc), sd)
                return op.format(a, b, c, d, c, a), kjoin(kc, ka), shape
            if op.startswith("where"):
                return op.format(a, b, a), kjoin(ka, kb), join(sa, sb)
            k = kjoin(ka, kb) if op in INT_BINARY else "f"  # + - * / of integers stay so
            return op.format(a, b), k, join(sa, sb)
        if r < 0.85:
            a, k, s = self.expr(depth - 1)
            # a float to an integer is a jump at every integer: only integers are cast to one
            dt = self.pick(["f32", "f16", "bf16", "f64"] + (list(INTS) if k != "f" else []))
            return f"{dt}({a})", kind(dt), s
        return self.reduction(depth)

    def reduction(self, depth):
        """A reduction of a full-rank expression over some of its axes, or all of them; the
        reduced axes stay, with size 1, and broadcast back where the caller uses it. Integers
        reduce exactly (sum and prod to i64, wrapping), or as f32; a float product's factors
        stay within 2^-6 of 1, so that 100003 of them neither overflow nor underflow."""
        a, k, s = self.expr(depth - 1)
        if s != self.full:
            a, k, s = f"({a} + {self.xname})", kjoin(k, kind(self.xdt)), self.full
        ints = k != "f" and self.rng.random() < 0.6
        if ints:
            red = self.pick(INT_REDUCE)
            k = "i64" if red in ("sum", "prod") else k
        else:
            red = self.pick(REDUCE)
            x = f"f32({a})" if k != "f" else a
            k = "f"
            if red == "prod":
                x = f"(1.0 + 0.015625 * tanh({x}))"
        axes = [i for i in range(self.rank) if self.rng.random() < 0.5]
        if not axes or len(axes) == self.rank and self.rng.random() < 0.5:
            res = f"{red}({a if ints else x})", k, self.one
        else:
            names = [str(i - self.rank if self.rng.random() < 0.3 else i) for i in axes]
            arg = names[0] if len(names) == 1 else "(" + ", ".join(names) + ")"
            shape = tuple(1 if i in axes else d for i, d in enumerate(s))
            res = f"{red}({a if ints else x}, axis={arg})", k, shape
        # (decided after every draw of the main generator, which goes on as it would)
        if self.rand is not None and self.rand.random() < 0.35:
            return self.argreduce(self.xname, self.full)
        return res

    def argreduce(self, a, s):
        """argmax or argmin of the full-shape parameter (its values exact on every target, so
        ties fall the same way) over one axis, or all of them; an i64 result."""
        red = "argmax" if self.rand.random() < 0.5 else "argmin"
        if self.rand.random() < 0.25:
            return f"{red}({a})", "i64", self.one
        axis = int(self.rand.integers(self.rank))
        shape = tuple(1 if i == axis else d for i, d in enumerate(s))
        name = axis - self.rank if self.rand.random() < 0.3 else axis
        return f"{red}({a}, axis={name})", "i64", shape

    def call(self, depth):
        """A call of the helper on a full-shape argument (cast to its parameter's dtype) and a
        rank-0 one (a literal, or the caller's rank-0 parameter): mapped over the first axis; a
        result that is not a float is cast to f32."""
        name, udt, vdt, rdt = self.helper
        a, k, s = self.expr(depth - 1)
        if s != self.full:
            a = f"({a} + {self.xname})"
        scalars = [n for n, _, sh, dims in self.params if dims == ()]
        v = f"{vdt}({scalars[0]})" if scalars and self.rng.random() < 0.5 else self.pick(
            ["0.5", "-1.25", "3"])
        call = f"{name}({udt}({a}), {v})"
        # its result may be of any dtype, bool and integers too: as f32, every operator takes it
        return (call if rdt in FLOATS else f"f32({call})"), "f", self.full

    def function(self, name, nout):
        """The source of a function of self.params with nout results (the first of the full
        shape) and their (dtype, shape)s."""
        lines = []
        for i in range(int(self.rng.integers(0, 3))):
            e, k, s = self.expr(3)
            lines.append(f"    let t{i} = {e};")
            self.lets.append((f"t{i}", k, s, None))
        outs, decls = [], []
        for i in range(nout):
            e, dt, s = self.output(i == 0)
            if i > 0:
                e, dt, s = self.squeezed(e, dt, s)
            outs.append(e)
            decls.append((dt, s))
        sig = ", ".join(f"{n}: {dt}{decl(dims)}" for n, dt, _, dims in self.params + self.extra)
        ret = ", ".join(f"{dt}{decl(s)}" for dt, s in decls)
        if len(decls) > 1:
            ret = f"({ret})"
        src = f"fn {name}({sig}) -> {ret} {{\n" + "\n".join(lines)
        src += ("\n" if lines else "") + f"    return {', '.join(outs)};\n}}\n"
        return src, decls

    def output(self, first):
        """One result: a number of any dtype, or (one in eight) a comparison's bool; the
        first has the full shape, which fixes the launch's."""
        e, k, s = self.expr(4)
        if self.rng.random() < 0.125:
            e2, k2, s2 = self.expr(3)
            s = join(s, s2)
            if first and s != self.full:
                e2, s = f"({e2} + {self.xname})", self.full
            return f"({e} > {e2})", "bool", s
        if first and s != self.full:
            e, s, k = f"({e} + {self.xname})", self.full, kjoin(k, kind(self.xdt))
        if k != "f" and self.rng.random() < 0.7:
            dt = k if self.rng.random() < 0.7 else self.pick(INTS)
        else:
            dt = self.pick(FLOATS)
        return f"{dt}({e})", dt, s

    def squeezed(self, e, dt, s):
        """Half the time, a later float result reduced over some axes and declared without
        them (SPEC §1: `-> f32[R]` for a sum over axis 1, the per-row loss a gradient most
        often starts from); (expression, dtype, declared dims). Only a result of every axis:
        one of fewer (a constant, a [C] parameter) has fewer in the language than in the
        shape kept here (numpy's, padded with ones), so an axis named here would be out of
        range there or another axis."""
        r = self.squeeze
        if r is None or dt not in FLOATS or s != self.full or r.random() < 0.5:
            return e, dt, s
        axes = [i for i in range(self.rank) if r.random() < 0.5] or [self.rank - 1]
        red = REDUCE[int(r.integers(len(REDUCE)))]
        if red == "prod":  # (as reduction() keeps a product's factors near 1)
            e = f"(1.0 + 0.015625 * tanh({e}))"
        names = [str(i - self.rank if r.random() < 0.3 else i) for i in axes]
        arg = names[0] if len(names) == 1 else "(" + ", ".join(names) + ")"
        kept = tuple(d for i, d in enumerate(s) if i not in axes)
        return f"{dt}({red}({e}, axis={arg}))", dt, kept

    def program(self, name):
        """A program: one in three with a helper function that it may call."""
        src = ""
        if self.rng.random() < 1 / 3:
            h = Gen(self.rng, self.rank - 1, HELPER_FULL[self.rank - 1], "u")
            h.xdt = self.pick(FLOATS)
            vdt = self.pick(FLOATS)
            h.params = [("u", h.xdt, h.full, h.full), ("v", vdt, h.one, ())]
            src, decls = h.function("helper", 1)
            src += "\n"
            self.helper = ("helper", h.xdt, vdt, decls[0][0])
        self.xdt = self.pick(FLOATS + list(INTS))
        self.params = [("x", self.xdt, self.full, self.full)]
        for pname, dims in PARAMS[self.rank]:
            if self.rng.random() < 0.5:
                dt = self.pick(FLOATS + list(INTS) + ["bool"])
                self.params.append((pname, dt, padded(dims, self.rank), dims))
        if self.rand is not None:
            self.extra = [("seed", "i64", self.one, ())]
        body, decls = self.function(name, int(self.rng.integers(1, 3)))
        return src + body, decls


def inputs(gen, rng, sizes):
    """Random non-zero floats in [-4, 4], integers in [-6, 6] with zero (an i64 parameter's in
    [-2^40, 2^40] one time in three: its sums and products then wrap, and it still converts to
    float64 exactly), and bools."""
    arrays = {}
    for name, dt, _, dims in gen.params:
        shape = tuple(sizes[d] if d != 1 else 1 for d in dims)
        if dt == "bool":
            arrays[name] = rng.random(size=shape) < 0.5
        elif dt == "i64" and rng.random() < 1 / 3:
            arrays[name] = rng.integers(-2 ** 40, 2 ** 40 + 1, size=shape)
        elif dt in INTS:
            arrays[name] = rng.integers(-6, 7, size=shape).astype(NP[dt])
        else:
            a = rng.uniform(-4.0, 4.0, size=shape)
            a[a == 0] = 0.5
            arrays[name] = a
    for name, _, _, _ in gen.extra:  # rand's seed, from rand's own generator: any i64
        arrays[name] = gen.rand.integers(-2 ** 63, 2 ** 63 - 1, dtype=np.int64, endpoint=True)
    gen.layouts = {}
    for name, _, _, _ in gen.params:
        a = arrays[name]
        k = int(gen.views.integers(0, len(LAYOUTS))) if gen.views is not None and a.ndim else 0
        if LAYOUTS[k] == "broadcast":  # the values the same along axis 0, read with stride 0
            arrays[name] = np.broadcast_to(a[:1], a.shape)
        gen.layouts[name] = LAYOUTS[k]
    return arrays


# how an input reaches fusec run (SPEC §3: inputs of any strides): the file holds other memory
# and the view (tools/view.c) gives back the array
LAYOUTS = ("dense", "transposed", "reversed", "stepped", "broadcast")


def layout(a, how):
    """(what the file holds, the view of it that is `a`)."""
    if how == "transposed":
        return np.ascontiguousarray(a.T), ".T"
    if how == "reversed":
        flip = "[" + ", ".join(["::-1"] * a.ndim) + "]"
        return np.ascontiguousarray(a[(slice(None, None, -1),) * a.ndim]), flip
    if how == "stepped":  # every other row, from the second, of an array with more rows
        base = np.zeros((2 * a.shape[0] + 1,) + a.shape[1:], a.dtype)
        base[1::2] = a
        return base, "[1::2]"
    if how == "broadcast":
        return np.ascontiguousarray(a[:1]), ".broadcast_to(%s)" % ", ".join(map(str, a.shape))
    return a, ""


def save(arrays, gen, tag, perturb=None, scale=2.0 ** -21):
    """The inputs as .npy files; with `perturb` (a generator), the f32 and f64 ones moved by
    up to `scale` of themselves (16-bit ones would round back)."""
    files = []
    for name, dt, _, _ in gen.params + gen.extra:
        a = arrays[name]
        if dt in ("f32", "f64") and perturb is not None:
            a = a * (1.0 + perturb.uniform(-1.0, 1.0, size=np.shape(a)) * scale)
        p = os.path.join(OUT, f"{tag}_{name}.npy")
        base, view = layout(np.asarray(a).astype(NP[dt]), gen.layouts.get(name, "dense"))
        np.save(p, base)
        files.append((name, p + view))
    return files


def results(path, files, decls, target, tag, extra=(), env=None, fn="prog"):
    outs = [os.path.join(OUT, f"{tag}_out{i}.npy") for i in range(len(decls))]
    rc, err = fusec_run(path, fn, files, outs, target, extra, env)
    if rc != 0:
        return None, err
    # integers and bools as they are (an i64 past 2^53 has no float64 of its own)
    return [a if a.dtype.kind in "biu" else a.astype(np.float64)
            for a in (np.load(p) for p in outs)], ""


def nvrtc_probe():
    """Whether this build compiles CUDA (NVRTC found): the CPU run of this test then also
    builds each program's kernels for sm_90, fused and --no-fuse, so that generated CUDA C
    that NVRTC or ptxas refuses is found without a GPU. Not in the runs for a named CPU
    (FUSEC_CPU): they test the CPU code; the host's run builds the CUDA code. Nor under
    FUSEC_CPU_TEST_QUICK (the sanitizer pass): the plain pass built the same programs."""
    if TARGET != "cpu" or os.environ.get("FUSEC_CPU") or QUICK:
        return False
    rc, _, err = run(["--target=cuda", "--arch=sm_90", "--emit=cubin", "--no-cache",
                      os.path.join(SRC, "examples", "gelu.fuse"), "-o", os.devnull])
    if rc != 0 and "NVRTC" in err:
        print(f"no NVRTC here: the CUDA builds are skipped ({err.strip()})")
        return False
    return True


def moved(a, b, tol, frac):
    """Where b differs from a by more than frac * tol, or in being finite."""
    return (np.abs(np.nan_to_num(b - a)) > frac * tol) | (np.isfinite(a) != np.isfinite(b))


class Case:
    """One program and its inputs, with the references the comparisons need."""

    def __init__(self, case, gen, src, decls, arrays, sizes, fn="prog"):
        self.case, self.gen, self.src, self.decls, self.arrays = case, gen, src, decls, arrays
        self.fn = fn
        self.tag = f"c{case}" if fn == "prog" else f"c{case}{fn}"
        self.path = os.path.join(OUT, f"p{self.tag}.fuse")
        with open(self.path, "w") as f:
            f.write(src)
        self.files = save(arrays, gen, self.tag)
        # an f64 result holds to f64's tolerance only when the computation was f64 throughout
        self.all64 = all(dt == "f64" for _, dt, _, _ in gen.params) and not any(
            c in src for c in ("f32(", "f16(", "i32(", "i64("))
        self.narrow = "bf16" if "bf16" in src else "f16" if "f16" in src else None
        dims = ", ".join(f"{k}={v}" for k, v in sizes.items())
        self.what = f"random program {case} (seed {SEED}, {dims}):\n{src}"
        self.perturbable = any(dt in ("f32", "f64") for _, dt, _, _ in gen.params)
        # i64 inputs past 2^24 (and what their sums and products wrap to) turned into floats
        # make f32 and f64 differ at will (u - (v + u) is 0 in f32 at u = 2^40, v in f64),
        # and no perturbation of an integer shows it: float results are not compared then
        self.large_ints = any(np.abs(arrays[n]).max(initial=0) > 2 ** 24
                              for n, dt, _, _ in gen.params if dt == "i64")
        # (a gradient sums over every axis its parameter was broadcast along)
        self.reduces = "sum(" in src or "mean(" in src or fn != "prog"
        # a float product's allowance (SPEC §5), 1e-5 + (n - 1) 2^-24, at the largest n
        self.prods = "prod((1.0" in src and 1e-5 + int(np.prod(list(sizes.values()))) * 2.0 ** -24
        self.perturbed = {}  # seed: its perturbed inputs' files
        self.confirming = {}  # mode: the references on the confirming perturbations

    def ref(self, mode, seed=None, scale=2.0 ** -21):
        """The reference's results, on the inputs or (seed) on perturbed ones (each set of
        perturbed inputs written once, for both modes)."""
        files = self.files
        if seed is not None:
            if seed not in self.perturbed:
                self.perturbed[seed] = save(self.arrays, self.gen, f"{self.tag}p{seed}",
                                            np.random.default_rng(seed), scale)
            files = self.perturbed[seed]
        extra = ("--no-fuse",) if mode == "nofuse" else ()
        r, err = results(self.path, files, self.decls, "ref", f"{self.tag}r{mode}", extra,
                         fn=self.fn)
        if r is None:
            # the checker accepted the program, so the reference must run it
            check(False, f"{self.what}the reference failed: {err}")
        return r

    def tolerance(self, want, dt):
        """The tolerance of the precision the result was computed in, plus a unit of the
        narrowest dtype it passed through (both sides rounded there, from values a rounding
        apart); and that dtype's name for close()."""
        prec = dt if dt != "f64" or self.all64 else "f32"
        extra = None
        if self.narrow and prec in ("f32", "f64"):  # a unit at 11 or 8 bits, any size
            extra = np.abs(np.nan_to_num(want)) * 2.0 ** (-10 if self.narrow == "f16" else -7)
        return tolerance(want, prec) + (0 if extra is None else extra), prec, extra

    def confirm(self, mode):
        """The reference on three larger perturbations (2^-18), run once per mode."""
        if mode not in self.confirming:
            self.confirming[mode] = [self.ref(mode, 1000 * self.case + k, 2.0 ** -18)
                                     for k in (1, 2, 3)]
        return self.confirming[mode]


def compare(c, mode, got, want, perturbed, other):
    """got against want where the reference is stable; returns (compared, skipped)."""
    n_cmp = n_skip = 0
    for i, (dt, _) in enumerate(c.decls):
        if dt in INTS or dt == "bool":
            # exact where the reference is stable: under the perturbation, and with every
            # intermediate rounded to its dtype (a comparison of floats may flip there)
            stable = (perturbed[i] == want[i]) & (other[i] == want[i])
            bad = np.argwhere((got[i] != want[i]) & stable)
            at = tuple(bad[0]) if len(bad) else None
            check(at is None, f"{c.what}{TARGET} {mode} result {i} ({dt}) differs at {at}: "
                  f"got {got[i][at] if at else None}, want {want[i][at] if at else None}")
            n_cmp += int(np.sum(stable))
            n_skip += int(np.sum(~stable))
            continue
        if c.large_ints:
            n_skip += want[i].size
            continue
        tol, prec, extra = c.tolerance(want[i], dt)
        unstable = moved(want[i], perturbed[i], tol, 1 / 8)
        # Every intermediate rounded to its dtype (the other reference): an overflow there
        # that the float64 reference does not meet makes the element unstable; any other
        # change widens the allowance by eight times itself, since the target rounds its
        # intermediates too (in f32, with math a unit or two off). A sum or mean adds its
        # own allowance (SPEC §5), which the epilogues carry.
        unstable |= np.isfinite(other[i]) != np.isfinite(want[i])
        widen = 8 * np.abs(np.nan_to_num(other[i] - want[i]))
        if c.reduces:
            widen = widen + 1e-4 * np.abs(np.nan_to_num(want[i]))
        if c.prods:
            widen = widen + 8 * c.prods * np.abs(np.nan_to_num(want[i]))
        extra = widen if extra is None else extra + widen
        tol = tol + widen
        ok, msg = close(np.where(unstable, want[i], got[i]), want[i], prec, extra=extra)
        if not ok and c.perturbable:
            # confirm on three larger perturbations before calling it a failure
            for p in c.confirm(mode):
                if p is not None:
                    unstable |= moved(want[i], p[i], tol, 1 / 4)
            ok, msg = close(np.where(unstable, want[i], got[i]), want[i], prec, extra=extra)
        n_cmp += int(np.sum(~unstable))
        n_skip += int(np.sum(unstable))
        check(ok, f"{c.what}{TARGET} {mode} result {i} ({dt}): {msg}")
    return n_cmp, n_skip


def grad_cases(case, gen, src, decls, arrays, sizes):
    """The program's gradient (`fn dprog = grad(prog)`, SPEC §1) as a case of its own, where
    prog has a float parameter and a float result: its inputs prog's and a cotangent per
    result (non-zero, of the result's type), its results a gradient per float parameter."""
    floats = [(n, dt, s, d) for n, dt, s, d in gen.params if dt in FLOATS]
    if not floats or not any(dt in FLOATS for dt, _ in decls):
        return []
    g = Gen(gen.rng, gen.rank)
    g.params = list(gen.params) + list(gen.extra)
    g.extra, g.views, g.layouts = [], None, dict(gen.layouts)
    names = {n for n, *_ in g.params}
    draws = np.random.default_rng([SEED, case, 2])
    garrays = dict(arrays)
    for i, (dt, dims) in enumerate(decls):
        name = "dy" if len(decls) == 1 else f"dy{i}"
        while name in names:
            name += "_"
        # as decl() declares it: rank 0 when every dim is 1
        shape = tuple(sizes[d] if d != 1 else 1 for d in dims) if decl(dims) != "[]" else ()
        if dt in FLOATS:
            a = draws.uniform(-1.0, 1.0, size=shape)
            a[a == 0] = 0.5
        else:
            a = draws.integers(0, 2, size=shape).astype(NP[dt])
        g.params.append((name, dt, dims, dims))
        garrays[name] = a
    gdecls = [(dt, d) for _, dt, _, d in floats]
    return [Case(case, g, src + "fn dprog = grad(prog);\n", gdecls, garrays, sizes, "dprog")]


def run_case(c, case, nvrtc):
    """The case on the target, fused and --no-fuse, against the reference; (compared,
    skipped) elements."""
    compared = skipped = 0
    ref = {m: (c.ref(m), c.ref(m, case)) for m in ("fused", "nofuse")}
    if any(r is None for pair in ref.values() for r in pair):
        return 0, 0
    for extra in ((), ("--no-fuse",)) if nvrtc and case % NVRTC_EVERY == 0 else ():
        rc, _, err = run(["--target=cuda", "--arch=sm_90", "--emit=cubin", *extra,
                          c.path, "-o", os.path.join(OUT, f"{c.tag}.cubin")])
        check(rc == 0, f"{c.what}CUDA build {' '.join(extra)}: {err}")
    # every other case streams its results (non-temporal stores), whatever their size
    env = dict(os.environ, FUSEC_CPU_STREAM_MIN_BYTES="0") if case % 2 else None
    for mode in ("fused", "nofuse"):
        extra = ("--no-fuse",) if mode == "nofuse" else ()
        got, err = results(c.path, c.files, c.decls, TARGET, f"{c.tag}t{mode}", extra, env,
                           fn=c.fn)
        if got is None:
            check(False, f"{c.what}{TARGET} {mode} failed: {err}")
            continue
        other = ref["nofuse" if mode == "fused" else "fused"][0]
        n, k = compare(c, mode, got, ref[mode][0], ref[mode][1], other)
        compared += n
        skipped += k
    return compared, skipped


def main():
    rng = np.random.default_rng(SEED)
    # (tall ones last: columns few and long enough to be cut into pieces, the plan's split)
    sizes = {2: [dict(R=1, C=1), dict(R=3, C=7), dict(R=5, C=1001), dict(R=37, C=33),
                 dict(R=2, C=4099), dict(R=64, C=129), dict(R=1, C=100003), dict(R=1031, C=5)],
             3: [dict(A=1, B=1, C=1), dict(A=2, B=3, C=5), dict(A=3, B=1, C=129),
                 dict(A=5, B=33, C=7), dict(A=2, B=7, C=1001), dict(A=7, B=5, C=3),
                 dict(A=700, B=3, C=2)]}
    counts = [0, 0]  # elements compared, skipped (added to by later()'s threads)
    lock = threading.Lock()

    def run_and_count(c, case):
        progress(f"random program {case}{'' if c.fn == 'prog' else ' ' + c.fn}")
        n, k = run_case(c, case, nvrtc)
        with lock:
            counts[0] += n
            counts[1] += k

    only = os.environ.get("FUSEC_RANDOM_ONLY")  # a case number: run that case only
    nvrtc = nvrtc_probe()
    for case in range(COUNT):
        rank = 3 if case % 3 == 2 else 2
        gen = Gen(rng, rank)
        draws = np.random.default_rng([SEED, case])
        gen.rand = draws if draws.random() < 0.4 else None
        # half the programs read their inputs through views (a generator of their own, so
        # that the programs and values stay those of the seed)
        views = np.random.default_rng([SEED, case, 1])
        gen.views = views if views.random() < 0.5 else None
        gen.squeeze = np.random.default_rng([SEED, case, 3])
        src, decls = gen.program("prog")
        size = sizes[rank][(case // 3) % len(sizes[rank])]
        arrays = inputs(gen, rng, size)
        if only is not None and case != int(only) or only is None and not in_shard(case):
            continue
        for c in [Case(case, gen, src, decls, arrays, size)] + grad_cases(case, gen, src, decls,
                                                                          arrays, size):
            later(run_and_count, c, case)
    wait_all()
    print(f"{COUNT} programs: {counts[0]} elements compared, {counts[1]} skipped as unstable")
    finish()


main()
