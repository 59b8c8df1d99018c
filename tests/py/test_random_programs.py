"""tests/py/test_random_programs.py: random .fuse programs, run by the CPU backend (or the GPU:
FUSEC_TEST_TARGET=cuda) fused and --no-fuse, against the reference interpreter on the same
inputs. Each program (two in three over [R, C], one in three over [A, B, C]) mixes
parameters of the full shape and of broadcasting ones ([C], [R, 1], [B, C], [A, 1, C],
[A, B, 1], []) in every dtype, element-wise operators and functions, casts, selects (with
bool operators in their conditions), and reductions over any set of axes (rows, columns,
middle axes, all) whose results broadcast back into the expression, so that fusion and the
code generators meet combinations that no hand-written program has.

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
  by 1e-4 relative where a sum or mean's allowance is carried through;
- a mismatch is confirmed on three larger perturbations (2^-18) before it counts.
The generator keeps small errors from blowing up without bound (exp, sin, cos and pow's
exponent take bounded arguments; floor and round do not meet whole numbers where tanh,
sigmoid and erf saturate; only integers are cast to i32), so what is left is mostly the code
generators' doing: wrong elements, axes, broadcasts, roundings or dtypes. The fused target
is compared with the fused reference and --no-fuse with --no-fuse, which round the same
stored intermediates (SPEC §1). Integer results must be equal where the reference is stable.
Where the target is the CPU and NVRTC is installed, each program's CUDA kernels are built for
sm_90 too (fused and --no-fuse): no GPU is needed for that.

The oracle is conservative, not exact: where a math function's own error (a unit or two,
within the SPEC) meets an amplifying expression that neither check above exposes, an element
can still differ by a little more than the allowance; over thousands of programs about one
in a thousand did, every one of them explained that way. A failure is a program to inspect
(FUSEC_RANDOM_ONLY, FUSEC_RANDOM_KEEP), not yet a bug; the default seed's programs pass.

FUSEC_RANDOM_PROGRAMS sets the number of programs (default 48; 12 with FUSEC_CPU_TEST_QUICK=1,
as under the sanitizers), FUSEC_RANDOM_SEED the seed (default: fixed, so that a failure
reproduces; the failing program is printed), FUSEC_RANDOM_KEEP a directory that keeps every
program and its inputs (p<case>.fuse, c<case>_<param>.npy), FUSEC_RANDOM_ONLY one case's
number to run that case alone."""
import os
import sys

sys.path.insert(0, os.path.dirname(__file__))
from fusectest import (SRC, check, close, finish, fusec_run, np, run,  # noqa: E402
                       target_or_skip, tmpdir, tolerance)

np.seterr(all="ignore")

TARGET = target_or_skip()
# under the sanitizers (FUSEC_CPU_TEST_QUICK, 10x slower) a quarter as many
QUICK = os.environ.get("FUSEC_CPU_TEST_QUICK") == "1"
COUNT = int(os.environ.get("FUSEC_RANDOM_PROGRAMS", "12" if QUICK else "48"))
SEED = int(os.environ.get("FUSEC_RANDOM_SEED", "20261122"))
OUT = os.environ.get("FUSEC_RANDOM_KEEP") or tmpdir()  # a directory to keep the files in
os.makedirs(OUT, exist_ok=True)

NP = {"i32": np.int32, "f16": np.float16, "bf16": np.float32, "f32": np.float32,
      "f64": np.float64}
FLOATS = ["f32", "f32", "f32", "f64", "f16", "bf16"]
# Parameters by rank of the program: (name, declared dims). An expression's shape is a tuple
# of the program's rank (its dims, or 1 where it has none: numpy broadcasting from the right).
PARAMS = {
    2: [("y", ("R", "C")), ("b", ("C",)), ("c", ("R", 1)), ("s", ())],
    3: [("y", ("A", "B", "C")), ("b", ("B", "C")), ("c", ("A", 1, "C")), ("d", ("A", "B", 1)),
        ("s", ())],
}
FULL = {2: ("R", "C"), 3: ("A", "B", "C")}


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
BINARY = ["({} + {})", "({} - {})", "({} * {})", "({} / {})", "minimum({}, {})",
          "maximum({}, {})", "({} > {} ? {} : {})", "hypot({}, {})", "atan2({}, {})",
          "where({} < 0.0, {}, {})", "pow(abs({}) + 0.5, 2.0 * tanh({}))",
          "where((({} > {}) && !({} < -1.25)) || isnan({}), {}, {})"]
INT_BINARY = ["({} + {})", "({} - {})", "({} * {})", "({} / {})", "({} % {})",
              "minimum({}, {})", "maximum({}, {})"]
REDUCE = ["sum", "mean", "max", "min"]


def join(a, b):
    """The broadcast shape of two expression shapes."""
    return tuple(y if x == 1 else x for x, y in zip(a, b))


class Gen:
    def __init__(self, rng, rank):
        self.rng = rng
        self.rank = rank
        self.full = FULL[rank]
        self.one = (1,) * rank
        # (name, dtype, shape, declared dims); a let's dtype is "i32" or None (a float)
        self.params = []
        self.lets = []

    def pick(self, seq):
        return seq[int(self.rng.integers(len(seq)))]

    def leaf(self):
        r = self.rng.random()
        if r < 0.15:
            lit = self.pick(["0.5", "2.0", "1.5", "3", "0.125", "-1.25"])
            return lit, ("i" if lit == "3" else "f"), self.one
        name, dt, shape, _ = self.pick(self.params + self.lets)
        return name, ("i" if dt == "i32" else "f"), shape

    def expr(self, depth):
        if depth <= 0 or self.rng.random() < 0.2:
            return self.leaf()
        r = self.rng.random()
        if r < 0.3:
            a, k, s = self.expr(depth - 1)
            u = self.pick(UNARY)
            return u.format(a, a), ("i" if u in ("-{}", "abs({})", "{} * {}") and k == "i" else "f"), s
        if r < 0.75:
            a, ka, sa = self.expr(depth - 1)
            b, kb, sb = self.expr(depth - 1)
            if ka == "i" and kb == "i" and self.rng.random() < 0.6:
                return self.pick(INT_BINARY).format(a, b), "i", join(sa, sb)
            op = self.pick(BINARY)
            if op.startswith("({} > {} ?"):
                c, kc, sc = self.expr(depth - 1)
                k = "i" if kc == "i" and ka == "i" else "f"
                return op.format(a, b, c, a), k, join(join(sa, sb), sc)
            if op.startswith("where((("):  # bool operators, in a condition
                c, kc, sc = self.expr(depth - 1)
                k = "i" if kc == "i" and ka == "i" else "f"
                return op.format(a, b, c, b, c, a), k, join(join(sa, sb), sc)
            if op.startswith("where"):
                return op.format(a, b, a), ("i" if ka == kb == "i" else "f"), join(sa, sb)
            k = "i" if ka == kb == "i" and op in INT_BINARY else "f"
            return op.format(a, b), k, join(sa, sb)
        if r < 0.85:
            a, k, s = self.expr(depth - 1)
            # a float to i32 is a jump at every integer: only integers are cast to it
            dt = self.pick(["f32", "f16", "bf16", "f64"] + (["i32"] if k == "i" else []))
            return f"{dt}({a})", ("i" if dt == "i32" else "f"), s
        # a reduction of a full-rank expression over some of its axes, or all of them; the
        # reduced axes stay, with size 1, and broadcast back where the caller uses it
        a, k, s = self.expr(depth - 1)
        if s != self.full:
            a, k, s = f"({a} + x)", ("f" if k == "f" or self.x_float else "i"), self.full
        if k == "i":
            a = f"f32({a})"
        red = self.pick(REDUCE)
        axes = [i for i in range(self.rank) if self.rng.random() < 0.5]
        if not axes or len(axes) == self.rank and self.rng.random() < 0.5:
            return f"{red}({a})", "f", self.one
        names = [str(i - self.rank if self.rng.random() < 0.3 else i) for i in axes]
        arg = names[0] if len(names) == 1 else "(" + ", ".join(names) + ")"
        shape = tuple(1 if i in axes else d for i, d in enumerate(s))
        return f"{red}({a}, axis={arg})", "f", shape

    def program(self, name):
        xdt = self.pick(FLOATS + ["i32"])
        self.x_float = xdt != "i32"
        self.params = [("x", xdt, self.full, self.full)]
        for pname, dims in PARAMS[self.rank]:
            if self.rng.random() < 0.5:
                dt = self.pick(FLOATS + ["i32"])
                self.params.append((pname, dt, padded(dims, self.rank), dims))
        lines = []
        for i in range(int(self.rng.integers(0, 3))):
            e, k, s = self.expr(3)
            lines.append(f"    let t{i} = {e};")
            self.lets.append((f"t{i}", "i32" if k == "i" else None, s, None))
        outs, decls = [], []
        for i in range(int(self.rng.integers(1, 3))):
            e, k, s = self.expr(4)
            if i == 0 and s != self.full:
                e, s = f"({e} + x)", self.full
                k = "f" if (k == "f" or self.x_float) else "i"
            dt = "i32" if k == "i" and self.rng.random() < 0.7 else self.pick(FLOATS)
            outs.append(f"{dt}({e})")
            decls.append((dt, s))
        sig = ", ".join(f"{n}: {dt}{decl(dims)}" for n, dt, _, dims in self.params)
        ret = ", ".join(f"{dt}{decl(s)}" for dt, s in decls)
        if len(decls) > 1:
            ret = f"({ret})"
        src = f"fn {name}({sig}) -> {ret} {{\n" + "\n".join(lines)
        src += ("\n" if lines else "") + f"    return {', '.join(outs)};\n}}\n"
        return src, decls


def inputs(gen, rng, sizes):
    """Random non-zero floats in [-4, 4] and integers in [-6, 6], zero included."""
    arrays = {}
    for name, dt, _, dims in gen.params:
        shape = tuple(sizes[d] if d != 1 else 1 for d in dims)
        if dt == "i32":
            arrays[name] = rng.integers(-6, 7, size=shape).astype(np.int32)
        else:
            a = rng.uniform(-4.0, 4.0, size=shape)
            a[a == 0] = 0.5
            arrays[name] = a
    return arrays


def save(arrays, gen, tag, perturb=None, scale=2.0 ** -21):
    """The inputs as .npy files; with `perturb` (a generator), the f32 and f64 ones moved by
    up to `scale` of themselves (16-bit ones would round back)."""
    files = []
    for name, dt, _, _ in gen.params:
        a = arrays[name]
        if dt in ("f32", "f64") and perturb is not None:
            a = a * (1.0 + perturb.uniform(-1.0, 1.0, size=np.shape(a)) * scale)
        p = os.path.join(OUT, f"{tag}_{name}.npy")
        np.save(p, np.asarray(a).astype(NP[dt]))
        files.append((name, p))
    return files


def results(path, files, decls, target, tag, extra=(), env=None):
    outs = [os.path.join(OUT, f"{tag}_out{i}.npy") for i in range(len(decls))]
    rc, err = fusec_run(path, "prog", files, outs, target, extra, env)
    if rc != 0:
        return None, err
    return [np.load(p).astype(np.float64) for p in outs], ""


def nvrtc_probe():
    """Whether this build compiles CUDA (NVRTC found): the CPU run of this test then also
    builds each program's kernels for sm_90, fused and --no-fuse, so that generated CUDA C
    that NVRTC or ptxas refuses is found without a GPU."""
    if TARGET != "cpu":
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

    def __init__(self, case, gen, src, decls, arrays, sizes):
        self.case, self.gen, self.src, self.decls, self.arrays = case, gen, src, decls, arrays
        self.path = os.path.join(OUT, f"p{case}.fuse")
        with open(self.path, "w") as f:
            f.write(src)
        self.files = save(arrays, gen, f"c{case}")
        # an f64 result holds to f64's tolerance only when the computation was f64 throughout
        self.all64 = all(dt == "f64" for _, dt, _, _ in gen.params) and not any(
            c in src for c in ("f32(", "f16(", "i32("))
        self.narrow = "bf16" if "bf16" in src else "f16" if "f16" in src else None
        dims = ", ".join(f"{k}={v}" for k, v in sizes.items())
        self.what = f"random program {case} (seed {SEED}, {dims}):\n{src}"
        self.perturbable = any(dt in ("f32", "f64") for _, dt, _, _ in gen.params)
        self.reduces = "sum(" in src or "mean(" in src
        self.perturbed = {}  # seed: its perturbed inputs' files
        self.confirming = {}  # mode: the references on the confirming perturbations

    def ref(self, mode, seed=None, scale=2.0 ** -21):
        """The reference's results, on the inputs or (seed) on perturbed ones (each set of
        perturbed inputs written once, for both modes)."""
        files = self.files
        if seed is not None:
            if seed not in self.perturbed:
                self.perturbed[seed] = save(self.arrays, self.gen, f"c{self.case}p{seed}",
                                            np.random.default_rng(seed), scale)
            files = self.perturbed[seed]
        extra = ("--no-fuse",) if mode == "nofuse" else ()
        r, err = results(self.path, files, self.decls, "ref", f"c{self.case}r{mode}", extra)
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
        if dt == "i32":
            ok = bool(np.all((got[i] == want[i]) | (perturbed[i] != want[i])))
            check(ok, f"{c.what}{TARGET} {mode} result {i}: integers differ")
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


def main():
    rng = np.random.default_rng(SEED)
    sizes = {2: [dict(R=1, C=1), dict(R=3, C=7), dict(R=5, C=1001), dict(R=37, C=33),
                 dict(R=2, C=4099), dict(R=64, C=129), dict(R=1, C=100003)],
             3: [dict(A=1, B=1, C=1), dict(A=2, B=3, C=5), dict(A=3, B=1, C=129),
                 dict(A=5, B=33, C=7), dict(A=2, B=7, C=1001), dict(A=7, B=5, C=3)]}
    compared = skipped = 0
    only = os.environ.get("FUSEC_RANDOM_ONLY")  # a case number: run that case only
    nvrtc = nvrtc_probe()
    for case in range(COUNT):
        rank = 3 if case % 3 == 2 else 2
        gen = Gen(rng, rank)
        src, decls = gen.program("prog")
        size = sizes[rank][(case // 3) % len(sizes[rank])]
        arrays = inputs(gen, rng, size)
        if only is not None and case != int(only):
            continue
        c = Case(case, gen, src, decls, arrays, size)
        ref = {m: (c.ref(m), c.ref(m, case)) for m in ("fused", "nofuse")}
        if any(r is None for pair in ref.values() for r in pair):
            continue
        for extra in ((), ("--no-fuse",)) if nvrtc else ():
            rc, _, err = run(["--target=cuda", "--arch=sm_90", "--emit=cubin", *extra,
                              c.path, "-o", os.path.join(OUT, f"c{case}.cubin")])
            check(rc == 0, f"{c.what}CUDA build {' '.join(extra)}: {err}")
        # every other case streams its results (non-temporal stores), whatever their size
        env = dict(os.environ, FUSEC_CPU_STREAM_MIN_BYTES="0") if case % 2 else None
        for mode in ("fused", "nofuse"):
            extra = ("--no-fuse",) if mode == "nofuse" else ()
            got, err = results(c.path, c.files, decls, TARGET, f"c{case}t{mode}", extra, env)
            if got is None:
                check(False, f"{c.what}{TARGET} {mode} failed: {err}")
                continue
            other = ref["nofuse" if mode == "fused" else "fused"][0]
            n, k = compare(c, mode, got, ref[mode][0], ref[mode][1], other)
            compared += n
            skipped += k
    print(f"{COUNT} programs: {compared} elements compared, {skipped} skipped as unstable")
    finish()


main()
