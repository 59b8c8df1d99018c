"""tests/package/test_package.py: the Python package (python/fusec) against numpy references:
every dtype (bf16 through ml_dtypes and PyTorch where they are installed), out=, several
results, plans and rebind, numbers for rank-0 parameters in any position, each kind of error
with its message, DLPack (versioned and legacy producers, each capsule's deleter run exactly
once, nothing copied, a broken producer refused without a crash), no growth over 10^4 calls,
calls from several Python threads at once, an unusable cache directory as a warning,
fusec.torch reached from `import fusec`, and the README's Python example as written. Run by
ctest (package.api) with the package imported from the source tree and FUSEC_LIBRARY naming
the build tree's libfusec.so; skipped (77) without numpy. On the CPU target;
FUSEC_TEST_TARGET=cuda runs the CUDA target's checks instead (emu.python_package: through the
emulated driver)."""
import gc
import os
import subprocess
import sys
import tempfile
import threading
import warnings

HERE = os.path.dirname(os.path.abspath(__file__))
sys.path.insert(0, os.path.join(HERE, "..", "cli_py"))
sys.path.insert(0, HERE)
from fusectest import check, close, finish, round_to  # noqa: E402  (exits 77 without numpy)

import numpy as np  # noqa: E402

import fusec  # noqa: E402
from dlpack_producer import LegacyProducer, Producer  # noqa: E402

try:
    import ml_dtypes
except ImportError:
    ml_dtypes = None
try:
    import torch
except ImportError:
    torch = None

SRC = os.environ.get("FUSEC_SRC", os.path.join(HERE, "..", ".."))
# cpu, or cuda: the CUDA target's path through the package, on a GPU or emulated (ctest's
# emu.python_package, whose stand-in driver's device memory is host memory)
TARGET = os.environ.get("FUSEC_TEST_TARGET", "cpu")
rng = np.random.default_rng(23)

FLOATS = ("f16", "bf16", "f32", "f64")
INTS = ("i32", "i64")
PROGRAM = "\n".join(
    ["fn f_%s(x: %s[R, C], y: %s[C]) -> %s[R, C] { return x * y + x; }" % (t, t, t, t)
     for t in FLOATS + INTS] +
    ["fn f_bool(x: bool[R, C], y: bool[C]) -> bool[R, C] { return x && !y; }",
     # several results of several dtypes, dims from one parameter
     "fn stats(x: f32[R, C]) -> (f32[R], f32[R], i64[R]) {",
     "    return sum(x, axis=1), max(x, axis=1), sum(x > 0.0, axis=1);",
     "}",
     "fn outer(a: f32[R, 1], b: f32[C]) -> f32[R, C] { return a * b; }",  # dims from two
     "fn scale(x: f32[N], s: f32[]) -> f32[N] { return x * s; }",
     "fn scale_first(s: f32[], x: f32[N]) -> f32[N] { return x * s; }",
     "fn both(a: f32[], b: i32[]) -> f32[] { return a * b; }",
     "fn total(x: f32[N]) -> f32[] { return sum(x); }",
     "fn gt(x: f32[N], y: f32[N]) -> bool[N] { return x > y; }",
     "fn fixed(x: f32[4, N]) -> f32[4, N] { return x + 1.0; }",
     "fn gelu(x: f32[N]) -> f32[N] {",
     "    return 0.5 * x * (1.0 + tanh(0.7978845608028654 * (x + 0.044715 * x * x * x)));",
     "}",
     "fn dgelu = grad(gelu);"])


def np_dtype(t):
    return {"f16": np.float16, "bf16": ml_dtypes.bfloat16 if ml_dtypes else None,
            "f32": np.float32, "f64": np.float64, "i32": np.int32, "i64": np.int64,
            "bool": np.bool_}[t]


def raises(fn, cls, *fragments):
    """Whether fn() raises cls with every fragment in its message; the message otherwise."""
    try:
        fn()
    except cls as e:
        msg = str(e)
        missing = [f for f in fragments if f not in msg]
        return (not missing, "message %r lacks %r" % (msg, missing))
    except Exception as e:  # noqa: BLE001
        return False, "raised %s: %s" % (type(e).__name__, e)
    return False, "did not raise"


def check_raises(what, fn, cls, *fragments):
    ok, why = raises(fn, cls, *fragments)
    check(ok, "%s: %s" % (what, why))


def python(code):
    """(exit status, output) of code run by a fresh interpreter with this test's environment
    and tests/package on its path: for what must not crash this one (a negative status is the
    signal that ended it) or must start from a fresh import."""
    env = dict(os.environ)
    env["PYTHONPATH"] = os.pathsep.join([HERE] + [p for p in (env.get("PYTHONPATH"),) if p])
    r = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, env=env,
                       timeout=300, cwd=SRC)
    return r.returncode, r.stdout + r.stderr


def gelu_ref(x):
    x = np.asarray(x, np.float64)
    return 0.5 * x * (1.0 + np.tanh(0.7978845608028654 * (x + 0.044715 * x ** 3)))


# ---- the module's surface ----------------------------------------------------------------------

def test_module(m):
    check(m.target == TARGET, "m.target is %r" % m.target)
    check("gelu" in m.functions and "stats" in m.functions and len(m.functions) == 17,
          "m.functions: %r" % (m.functions,))
    f = m.stats
    check(f is m.stats and f is m["stats"], "a function is looked up once")
    check(f.name == "stats", "name")
    check(f.params == (fusec.Param("x", "f32", ("R", "C")),), "params: %r" % (f.params,))
    check([(r.dtype, r.shape) for r in f.results] == [("f32", ("R",)), ("f32", ("R",)),
                                                      ("i64", ("R",))],
          "results: %r" % (f.results,))
    check(m.fixed.params[0].shape == (4, "N"), "a literal dim: %r" % (m.fixed.params,))
    check(m.scale.params[1].shape == (), "a rank-0 parameter")
    check(m.gelu.num_kernels == 1, "gelu fuses into one kernel")
    check("kernel 0 pointwise" in m.emit("ir"), "emit('ir')")
    check(fusec.__version__.count(".") == 2, "__version__ %r" % fusec.__version__)
    check(not hasattr(m, "nope"), "hasattr of a missing function is False")
    check_raises("a missing function", lambda: m.nope, fusec.Error, "no function 'nope'")
    check_raises("a missing function is an AttributeError", lambda: m["nope"], AttributeError,
                 "nope")


def test_compile_errors():
    check_raises("a source error", lambda: fusec.compile_string(
        "fn f(x: f32[N]) -> f32[N] { return y; }", name="bad.fuse"), fusec.Error,
        "bad.fuse:1:", "error:", "'y'")
    try:
        fusec.compile_string("fn f(x: f32[N]) -> f32[N] { return y; }")
    except fusec.Error as e:
        check(e.status == 2 and not isinstance(e, ValueError),
              "a source error: status 2, not a ValueError (%r)" % e.status)
        check("^" in e.diagnostics, "the diagnostics have a caret")
    check_raises("a missing file", lambda: fusec.compile("/nonexistent/x.fuse", target=TARGET),
                 fusec.Error, "cannot open '/nonexistent/x.fuse'")
    check_raises("an unknown target", lambda: fusec.compile_string("", target="tpu"),
                 ValueError, "target must be one of")
    for bad in (-1, "0", 1.0):
        check_raises("device=%r" % (bad,), lambda: fusec.compile_string("", device=bad),
                     ValueError, "device must be a CUDA device ordinal")
    m = fusec.compile(os.path.join(SRC, "examples", "gelu.fuse"), target=TARGET)
    check(m.functions == ("gelu",), "compile() a file")
    if TARGET != "cuda":  # the host targets take a device and run where they always do
        m0 = fusec.compile(os.path.join(SRC, "examples", "gelu.fuse"), target=TARGET, device=0)
        x = np.linspace(-2, 2, 7, dtype=np.float32)
        check(np.array_equal(m0.gelu(x), m.gelu(x)), "compile(device=0) on %s" % TARGET)


# ---- results against numpy ----------------------------------------------------------------------

def inputs(t, shape):
    if t == "bool":
        return rng.random(shape) < 0.5
    if t in INTS:
        return rng.integers(-1000, 1000, size=shape).astype(np_dtype(t))
    return rng.uniform(-4, 4, size=shape).astype(np_dtype(t))


def reference(t, x, y):
    if t == "bool":
        return x & ~y
    if t in INTS:
        return x * y + x
    xd, yd = np.asarray(x, np.float64), np.asarray(y, np.float64)
    return round_to(xd * yd + xd, t)


def check_dtype(m, t, shape=(5, 37)):
    x, y = inputs(t, shape), inputs(t, shape[1:])
    got = m["f_" + t](x, y)
    check(type(got) is np.ndarray and got.dtype == np_dtype(t) and got.shape == shape,
          "%s: a numpy result of its dtype and shape (%s %s)" % (t, got.dtype, got.shape))
    want = reference(t, x, y)
    if t in FLOATS:
        ok, why = close(got.astype(np.float64), want, t)
        check(ok, "%s: %s" % (t, why))
    else:
        check(np.array_equal(got, want), "%s: the values" % t)


def test_dtypes(m):
    for t in ("f16", "f32", "f64", "i32", "i64", "bool"):
        check_dtype(m, t)
    if ml_dtypes is None:
        print("ml_dtypes is not installed: bf16 numpy arrays not tested")
    else:
        check_dtype(m, "bf16")
    x = rng.uniform(-4, 4, size=(3, 50)).astype(np.float32)
    s, mx, npos = m.stats(x)
    check(close(s, x.astype(np.float64).sum(1), "f32", extra=1e-5 * 50 * 4)[0], "stats: sum")
    check(np.array_equal(mx, x.max(1)), "stats: max")
    check(npos.dtype == np.int64 and np.array_equal(npos, (x > 0).sum(1)), "stats: count")
    a, b = rng.uniform(size=(3, 1)).astype(np.float32), rng.uniform(size=7).astype(np.float32)
    check(np.allclose(m.outer(a, b), a * b) and m.outer(a, b).shape == (3, 7),
          "a result whose dims come from two parameters")
    x = rng.uniform(size=9).astype(np.float32)
    check(np.allclose(m.scale(x, np.array(3.0, np.float32)), 3 * x), "a rank-0 parameter")
    check(np.allclose(m.scale(x, 3.0), 3 * x), "a Python number for a rank-0 parameter")
    check(np.allclose(m.scale(x, np.float32(2)), 2 * x), "a numpy scalar")
    t = m.total(x)
    check(t.shape == () and np.isclose(t, x.sum()), "a rank-0 result")
    g = m.gt(x, x[::-1].copy())
    check(g.dtype == np.bool_ and np.array_equal(g, x > x[::-1]), "a bool result")
    e = np.zeros((0,), np.float32)
    check(m.gelu(e).shape == (0,), "an empty array")
    big = rng.uniform(-3, 3, size=1 << 20).astype(np.float32)
    check(close(m.gelu(big), gelu_ref(big), "f32")[0], "gelu over 2^20 elements")


def test_numbers(m):
    """A Python or numpy number for a rank-0 parameter, first or not: read as a 0-d array of
    the parameter's dtype; the results made by the framework of the first argument that is an
    array (numpy when every argument is a number)."""
    x = rng.uniform(size=9).astype(np.float32)
    for what, s in (("a Python float", 2.0), ("a Python int", 2), ("a numpy scalar",
                                                                    np.float32(2))):
        for f, args in (("scale", (x, s)), ("scale_first", (s, x))):
            try:
                got = m[f](*args)
            except Exception as e:  # noqa: BLE001
                check(False, "%s as %s's %s argument: %s" % (what, f, "first" if args[0] is s
                                                               else "last", e))
                continue
            check(type(got) is np.ndarray and np.array_equal(got, 2 * x),
                  "%s for %s's rank-0 parameter: %r" % (what, f, got))
    y = np.empty_like(x)
    try:
        check(m.scale_first(3.0, x, out=y) is y and np.array_equal(y, 3 * x),
              "a number first, with out=")
        p = m.scale_first.plan(0.5, x)
        check(np.array_equal(p(), 0.5 * x), "a plan of a number first")
        r = m.both(1.5, 4)
        check(type(r) is np.ndarray and r.shape == () and r == 6.0,
              "numbers alone: a 0-d numpy result (%r)" % (r,))
    except Exception as e:  # noqa: BLE001
        check(False, "a number first: %s: %s" % (type(e).__name__, e))


# ---- out=, several results, in place ------------------------------------------------------------

def test_out(m):
    x = rng.uniform(-3, 3, size=100).astype(np.float32)
    y = np.full_like(x, np.nan)
    r = m.gelu(x, out=y)
    check(r is y and close(y, gelu_ref(x), "f32")[0], "out= one array, returned")
    x2 = rng.uniform(size=(4, 6)).astype(np.float32)
    outs = (np.empty(4, np.float32), np.empty(4, np.float32), np.empty(4, np.int64))
    r = m.stats(x2, out=outs)
    check(r is outs and np.array_equal(outs[1], x2.max(1)), "out= a tuple for several results")
    outs_l = [np.empty(4, np.float32), np.empty(4, np.float32), np.empty(4, np.int64)]
    m.stats(x2, out=outs_l)
    check(np.array_equal(outs_l[1], x2.max(1)), "out= a list")
    r = m.stats(x2)
    check(isinstance(r, tuple) and len(r) == 3, "several results come back as a tuple")
    z = x.copy()
    m.gelu(z, out=z)
    check(close(z, gelu_ref(x), "f32")[0], "in place: out= the input itself")
    # zero copy: the library wrote into the caller's memory, reached through the capsule
    backing = np.zeros(100, np.float32)
    p = Producer(backing)
    m.gelu(x, out=p)
    check(close(backing, gelu_ref(x), "f32")[0], "out= a DLPack producer's own memory")
    big = np.ones(1 << 22, np.float32)
    before = rss()
    m.gelu(big, out=big)
    check(rss() - before < 8 << 20, "no copy of a 16 MB array read and written in place")


# ---- plans ---------------------------------------------------------------------------------------

def test_plans(m):
    x = rng.uniform(-3, 3, size=64).astype(np.float32)
    y = np.empty_like(x)
    p = m.gelu.plan(x, out=y)
    check(p() is y and close(y, gelu_ref(x), "f32")[0], "p() replays into out")
    x[:] = 1.0
    p()
    check(close(y, gelu_ref(x), "f32")[0], "p() reads the bound array's current values")
    x2, y2 = rng.uniform(size=64).astype(np.float32), np.zeros(64, np.float32)
    old = y.copy()
    p.rebind(x2, out=y2)
    p()
    check(close(y2, gelu_ref(x2), "f32")[0] and np.array_equal(y, old),
          "rebind: p() writes the new out, not the old")
    check_raises("rebind to another shape", lambda: p.rebind(
        np.zeros(8, np.float32), out=np.zeros(8, np.float32)), ValueError)
    p.close()
    check_raises("a closed plan", p, fusec.Error, "closed")
    q = m.stats.plan(rng.uniform(size=(3, 5)).astype(np.float32))
    s, mx, n = q()
    check(s.shape == (3,) and q.out[0] is s, "a plan makes its results when not given out=")
    # the plan holds its arrays' capsules: a producer's memory stays lent until rebind
    px, py = Producer(np.ones(16, np.float32)), Producer(np.zeros(16, np.float32))
    p = m.gelu.plan(px, out=py)
    check(px.outstanding == 1 and py.outstanding == 1, "a plan holds one capsule per array")
    p()
    check(np.allclose(py.arr, gelu_ref(np.ones(16))), "a plan over DLPack producers")
    p.rebind(np.ones(16, np.float32), out=np.zeros(16, np.float32))
    check(px.outstanding == 0 and py.outstanding == 0, "rebind lets the old capsules go")
    px2 = Producer(np.ones(16, np.float32))
    with m.gelu.plan(px2, out=np.zeros(16, np.float32)):
        pass
    check(px2.outstanding == 0, "closing a plan lets its capsules go")
    m3 = fusec.compile_string(PROGRAM, target=TARGET)
    px3 = Producer(np.ones(16, np.float32))
    p3 = m3.gelu.plan(px3, out=np.zeros(16, np.float32))
    m3.close()
    check(px3.outstanding == 0, "closing a module closes its plans")
    check_raises("a plan of a closed module", p3, fusec.Error, "closed")


# ---- errors --------------------------------------------------------------------------------------

def test_errors(m):
    f32 = np.zeros(8, np.float32)
    two = np.zeros((2, 3), np.float32)
    check_raises("wrong dtype", lambda: m.gelu(np.zeros(8)), ValueError,
                 "parameter 'x': expected f32, got f64")
    check_raises("wrong rank", lambda: m.gelu(two), ValueError,
                 "parameter 'x': expected rank 1, got rank 2")
    check_raises("rank 9", lambda: m.gelu(np.zeros((1,) * 9, np.float32)), ValueError,
                 "parameter 'x': rank 9 is not one fusec takes (0 to 8)")
    check_raises("dims that disagree", lambda: m.f_f32(two, np.zeros(4, np.float32)),
                 ValueError, "parameter 'y'", "C")
    check_raises("a literal dim", lambda: m.fixed(np.zeros((3, 2), np.float32)), ValueError,
                 "parameter 'x'")
    check_raises("too many arrays", lambda: m.gelu(f32, f32), ValueError,
                 "'gelu' takes 1 input, got 2")
    check_raises("too few arrays", lambda: m.f_f32(two), ValueError,
                 "'f_f32' takes 2 inputs, got 1")
    check_raises("a gradient without its cotangent", lambda: m.dgelu(f32), ValueError,
                 "'dgelu' takes 2 inputs, got 1: missing 'dy'", "dgelu = grad(gelu)",
                 "gradient of the loss with respect to gelu's result")
    check_raises("too many results", lambda: m.gelu(f32, out=(f32.copy(), f32.copy())),
                 ValueError, "'gelu' has 1 result, got 2")
    check_raises("out of the wrong shape", lambda: m.gelu(f32, out=np.zeros(9, np.float32)),
                 ValueError, "result 0: shape does not match")
    check_raises("out of the wrong dtype", lambda: m.gelu(f32, out=np.zeros(8)), ValueError,
                 "result 0: expected f32, got f64")
    both = np.zeros(9, np.float32)
    check_raises("out overlapping an input", lambda: m.gelu(both[:8], out=both[1:]), ValueError,
                 "result 0 overlaps parameter 'x' in memory")
    check_raises("a strided out", lambda: m.gelu(f32, out=np.zeros(16, np.float32)[::2]),
                 ValueError, "result 0: results must be dense")
    check_raises("a transposed out", lambda: m.f_f32(
        np.ones((3, 2), np.float32), np.ones(2, np.float32),
        out=np.zeros((2, 3), np.float32).T), ValueError, "result 0: results must be dense")
    wide = np.zeros(20, np.float32)
    check_raises("out inside a strided input's span", lambda: m.gelu(
        wide[::2], out=wide[1:11]), ValueError, "result 0 overlaps parameter 'x'")
    ok = np.zeros((3, 1), np.float32)[:, :]  # size-1 dims may have any stride
    check(m.outer(ok, np.ones(2, np.float32)).shape == (3, 2), "size-1 dims' strides")
    check_raises("an unsupported dtype", lambda: m.gelu(np.zeros(8, np.uint8)), ValueError,
                 "parameter 'x': dtype uint8 is not one fusec takes")
    check_raises("complex", lambda: m.gelu(np.zeros(8, np.complex64)), ValueError,
                 "dtype complex64")
    ro = np.zeros(8, np.float32)
    ro.flags.writeable = False
    check_raises("a read-only out", lambda: m.gelu(f32, out=ro), ValueError,
                 "result 0: the array is read-only")
    check(m.gelu(ro).shape == (8,), "a read-only input is fine")
    check_raises("not an array", lambda: m.gelu([1.0, 2.0]), ValueError,
                 "parameter 'x': list is not an array")
    check_raises("a device the target cannot reach", lambda: m.gelu(
        Producer(f32, device=(2, 0))), ValueError,
        "parameter 'x': the array is on cuda:0", "target (cpu) cannot reach")
    check_raises("an out on a device", lambda: m.gelu(f32, out=Producer(f32.copy(),
                                                                        device=(2, 1))),
                 ValueError, "result 0: the array is on cuda:1")
    check_raises("a DLPack read-only flag", lambda: m.gelu(f32, out=Producer(
        f32.copy(), read_only=True)), ValueError, "read-only")
    check_raises("DLPack uint", lambda: m.gelu(Producer(f32, code=1)), ValueError,
                 "dtype uint32")
    try:
        m.gelu(np.zeros(8))
    except fusec.Error as e:
        check(e.status == 6 and e.message == str(e), "status and message: %r" % e.status)
    with fusec.compile_string(PROGRAM, target=TARGET) as m2:
        g = m2.gelu
    check_raises("a closed module", lambda: g(f32), fusec.Error, "the module is closed")


# ---- DLPack --------------------------------------------------------------------------------------

def test_dlpack(m):
    x = rng.uniform(-3, 3, size=32).astype(np.float32)
    for cls in (Producer, LegacyProducer):
        px, py = cls(x.copy()), cls(np.zeros(32, np.float32))
        for _ in range(5):
            m.gelu(px, out=py)
        check(close(py.arr, gelu_ref(x), "f32")[0], "%s: the values" % cls.__name__)
        check(px.outstanding == 0 and py.outstanding == 0 and px.deleted == px.exported >= 5,
              "%s: each capsule's deleter ran once (%d exported, %d deleted)"
              % (cls.__name__, px.exported, px.deleted))
        r = m.gelu(px)
        check(type(r) is np.ndarray, "%s: results of an unknown framework are numpy" %
              cls.__name__)
    pc = Producer(x.copy(), strides=(1,))
    m.gelu(pc)
    check(pc.outstanding == 0, "explicit dense strides are fine")
    bad = Producer(x.copy(), device=(2, 0))
    for _ in range(3):
        raises(lambda: m.gelu(bad), ValueError)
    check(bad.outstanding == 0, "a refused array's capsule is let go too")
    # a producer's DLTensor with a rank and no shape pointer: refused, never read (a read of
    # address 0 would end the interpreter), whichever path reads it; in a child, so that a
    # crash is reported as one
    rc, said = python(
        "import numpy as np, fusec\n"
        "from dlpack_producer import Producer\n"
        "m = fusec.compile_string(%r, target='cpu')\n"
        "x = np.ones(4, np.float32)\n"
        "for call in (lambda p: m.gelu(p), lambda p: m.gelu(p, out=np.empty_like(x)),\n"
        "             lambda p: m.gelu(x, out=p), lambda p: m.gelu.plan(p)):\n"
        "    try:\n"
        "        call(Producer(x.copy(), null_shape=True))\n"
        "        print('no error')\n"
        "    except fusec.ArgumentError as e:\n"
        "        print('refused:', e)\n" % PROGRAM)
    check(rc == 0 and said.count("refused:") == 4 and "no shape" in said,
          "a DLTensor without a shape: refused, no crash (status %d):\n%s" % (rc, said))
    class NotACapsule:
        def __dlpack__(self, stream=None, max_version=None, **kw):
            return 12345

        def __dlpack_device__(self):
            return (1, 0)
    check_raises("a __dlpack__ that gives no capsule", lambda: m.gelu(NotACapsule()),
                 ValueError, "parameter 'x'", "PyCapsule")
    before = sys.getrefcount(x)
    for _ in range(1000):
        m.gelu(x)
    check(sys.getrefcount(x) == before, "numpy's deleter ran for every call (refcount %d, %d)"
          % (before, sys.getrefcount(x)))


# ---- no leak, threads ----------------------------------------------------------------------------

def test_strides(m):
    """Views of any strides (SPEC §3) read in place: each against the same call on a
    contiguous copy, bit for bit (the same kernels run on the same values)."""
    base = rng.uniform(-2, 2, size=(11, 14)).astype(np.float32)
    row = rng.uniform(-2, 2, size=20).astype(np.float32)
    views = {
        "transposed": (base[:7, :5].T, row[:7]),
        "stepped": (base[::2, 1::3], row[:5]),
        "reversed": (base[::-1, ::-1], row[:14][::-1]),
        "interleaved": (base.reshape(11, 7, 2)[:, :, 1], row[::2][:7]),
        "broadcast_to (read-only, stride 0)": (np.broadcast_to(row[:9], (4, 9)), row[9:18]),
        "a broadcast column": (np.broadcast_to(row[:6, None], (6, 3)), row[::-3][:3]),
    }
    for what, (x, y) in views.items():
        want = m.f_f32(np.ascontiguousarray(x), np.ascontiguousarray(y))
        got = m.f_f32(x, y)
        check(np.array_equal(got, want), "%s: %s" % (what, close(got, want, "f32")[1]))
        s = m.stats(x)
        sw = m.stats(np.ascontiguousarray(x))
        check(all(np.allclose(a, b, rtol=1e-6, atol=1e-6) for a, b in zip(s, sw)),
              "%s: reductions" % what)
    mem = rng.uniform(-2, 2, size=(11, 14)).astype(np.float32)  # described transposed:
    got = m.f_f32(Producer(mem.reshape(14, 11), strides=(1, 14)), row[:11])
    check(np.array_equal(got, m.f_f32(np.ascontiguousarray(mem.T), row[:11])),
          "a DLPack producer's own strides")
    # a plan keeps the strides it was made with; re-bound to others it says so
    x, y = base[::2, 1::3], row[:5]
    out = np.empty((6, 5), np.float32)
    p = m.f_f32.plan(x, y, out=out)
    p()
    check(np.array_equal(out, m.f_f32(np.ascontiguousarray(x), y)), "a plan of a strided view")
    x2 = (base * 2)[::2, 1::3]
    p.rebind(x2, y, out=out)
    p()
    check(np.array_equal(out, m.f_f32(np.ascontiguousarray(x2), y)),
          "a plan re-bound to another view of the same strides")
    check_raises("a plan re-bound to other strides", lambda: p.rebind(
        np.ascontiguousarray(x2), y, out=out), ValueError, "strides it was made for")
    p.close()


def rss():
    with open("/proc/self/statm") as f:
        return int(f.read().split()[1]) * os.sysconf("SC_PAGE_SIZE")


def test_leak(m):
    x = rng.uniform(size=256).astype(np.float32)
    y = np.empty_like(x)
    p = m.gelu.plan(x, out=y)
    prod = Producer(x.copy())
    bad = np.zeros(256)

    def calls(n):
        for _ in range(n):
            m.gelu(x, out=y)
            m.gelu(x)
            m.stats(x.reshape(16, 16))
            p()
            p.rebind(x, out=y)
            m.gelu(prod)
            raises(lambda: m.gelu(bad), ValueError)
    if os.environ.get("FUSEC_PY_SANITIZED"):
        # AddressSanitizer's quarantine keeps freed memory, so RSS says nothing here: a few
        # hundred calls of each kind look for memory errors (the plain pass measures RSS)
        calls(300)
        print("under AddressSanitizer: RSS not checked")
    else:
        calls(2000)
        gc.collect()
        start = rss()
        calls(10000)
        gc.collect()
        grown = rss() - start
        check(grown < 1 << 20, "RSS steady over 10^4 calls of each kind: grew %d KB"
              % (grown >> 10))
    check(prod.outstanding == 0, "no capsule left outstanding")


def test_threads(m):
    n_threads, calls = 8, 300
    shared_x = rng.uniform(-3, 3, size=1000).astype(np.float32)
    shared_y = np.empty_like(shared_x)
    plan = m.gelu.plan(shared_x, out=shared_y)
    errors = []

    def work(seed):
        r = np.random.default_rng(seed)
        try:
            for k in range(calls):
                x = r.uniform(-3, 3, size=int(r.integers(1, 5000))).astype(np.float32)
                if not close(m.gelu(x), gelu_ref(x), "f32")[0]:
                    errors.append("thread %d call %d: gelu" % (seed, k))
                a = r.uniform(size=(int(r.integers(1, 30)), 17)).astype(np.float32)
                s, mx, _ = m.stats(a)
                if not np.array_equal(mx, a.max(1)):
                    errors.append("thread %d call %d: stats" % (seed, k))
                plan()
                ok, _ = raises(lambda: m.gelu(x.astype(np.float64)), ValueError)
                if not ok:
                    errors.append("thread %d call %d: an error call" % (seed, k))
        except Exception as e:  # noqa: BLE001
            errors.append("thread %d: %s: %s" % (seed, type(e).__name__, e))

    threads = [threading.Thread(target=work, args=(s,)) for s in range(n_threads)]
    for t in threads:
        t.start()
    for t in threads:
        t.join()
    check(not errors, "%d threads at once: %s" % (n_threads, errors[:3]))
    check(close(shared_y, gelu_ref(shared_x), "f32")[0], "a plan replayed from every thread")


# ---- PyTorch, ml_dtypes --------------------------------------------------------------------------

def test_torch(m):
    if torch is None:
        print("PyTorch is not installed: its tests are skipped (pip install torch to run them)")
        return
    for t, tt in (("f32", torch.float32), ("f64", torch.float64), ("f16", torch.float16),
                  ("bf16", torch.bfloat16), ("i32", torch.int32), ("i64", torch.int64)):
        x = torch.randint(-50, 50, (4, 9)).to(tt)
        y = torch.randint(-50, 50, (9,)).to(tt)
        got = m["f_" + t](x, y)
        check(isinstance(got, torch.Tensor) and got.dtype == tt, "torch %s: a tensor out" % t)
        want = (x.double() * y.double() + x.double())
        if t in FLOATS:
            ok, why = close(got.double().numpy(), round_to(want.numpy(), t), t)
        else:
            ok, why = bool(torch.equal(got, (x * y + x))), ""
        check(ok, "torch %s: %s" % (t, why))
    xb = torch.rand(3, 5) < 0.5
    got = m.f_bool(xb, torch.rand(5) < 0.5)
    check(got.dtype == torch.bool, "torch bool")
    x = torch.rand(100) * 6 - 3
    out = torch.empty(100)
    check(m.gelu(x, out=out) is out and torch.allclose(out, torch.nn.functional.gelu(
        x, approximate="tanh"), atol=1e-6), "torch out= and the values against F.gelu")
    xt, yt = torch.rand(5, 3) * 4 - 2, torch.rand(12) * 4 - 2
    for what, a, b in (("transposed", xt.t(), yt[:5]), ("a stepped slice", xt.t(), yt[::2][:5]),
                       ("expand (stride 0)", xt[:1].expand(4, 3), yt[3:6])):
        got = m.f_f32(a, b)
        check(torch.equal(got, m.f_f32(a.contiguous(), b.contiguous())), "torch: " + what)
    check(m.outer(torch.zeros(3, 1).expand(3, 1), torch.ones(2)).shape == (3, 2),
          "a tensor whose size-1 dim has stride 0")
    check_raises("a tensor that requires grad",
                 lambda: m.gelu(torch.zeros(4, requires_grad=True)), ValueError,
                 "parameter 'x'", "DLPack")
    # the negative bit: a lazy negation whose memory holds -values (DLPack cannot say so)
    c = torch.complex(torch.arange(4.0), torch.arange(4.0) + 1)
    neg = c.conj().imag  # values -1..-4, memory 1..4
    check(neg.is_neg() and float(neg[0]) == -1.0, "c.conj().imag has the negative bit")
    check_raises("a tensor with the negative bit", lambda: m.gelu(neg), ValueError,
                 "parameter 'x'", "negative bit", "resolve_neg()")
    check_raises("a tensor with the negative bit as out=",
                 lambda: m.gelu(torch.zeros(4), out=neg), ValueError, "result 0", "negative bit")
    check_raises("a plan of a tensor with the negative bit", lambda: m.gelu.plan(neg),
                 ValueError, "negative bit")
    check(torch.equal(m.gelu(neg.resolve_neg()), m.gelu(-torch.arange(1.0, 5.0))),
          "resolved, it is read as its values")
    check_raises("a complex tensor with the conjugate bit", lambda: m.gelu(
        torch.ones(4, dtype=torch.complex64).conj()), ValueError, "parameter 'x'", "complex64")
    got = m.scale_first(2.0, torch.arange(3.0))
    check(isinstance(got, torch.Tensor) and torch.equal(got, torch.arange(3.0) * 2),
          "a number first, a tensor after: a tensor result")
    # where the capsule layout is not known (another interpreter), PyTorch's capsules go
    # through PyCapsule_GetPointer: read at the right address, not at 0
    rc, said = python("import torch, fusec\n"
                     "fusec._dlpack.CAPSULE_POINTER_OFFSET = None\n"
                     "m = fusec.compile_string(%r, target='cpu')\n"
                     "print(m.f_f32(torch.ones(2, 3), torch.ones(3)).tolist())" % PROGRAM)
    check(rc == 0 and "[[2.0, 2.0, 2.0], [2.0, 2.0, 2.0]]" in said,
          "PyTorch tensors with the capsule layout unknown (status %d): %s" % (rc, said[-2000:]))
    # what PyTorch's own export refuses is refused on the package's fast path for CPU tensors
    check_raises("a sparse tensor", lambda: m.gelu(torch.zeros(4).to_sparse()), ValueError,
                 "parameter 'x'", "layout")
    check_raises("a meta tensor", lambda: m.gelu(torch.zeros(4, device="meta")), ValueError,
                 "parameter 'x'")
    check_raises("a result that requires grad",
                 lambda: m.gelu(x, out=torch.zeros(100, requires_grad=True)), ValueError,
                 "result 0", "gradient")
    s, mx, n = m.stats(torch.rand(3, 4))
    check(all(isinstance(r, torch.Tensor) for r in (s, mx, n)) and n.dtype == torch.int64,
          "torch: several results")
    p = m.gelu.plan(x, out=out)
    x.fill_(1.0)
    p()
    check(torch.allclose(out, torch.full((100,), float(gelu_ref(1.0)))), "torch plan")


# ---- the CUDA target ---------------------------------------------------------------------------

def device_array(a):
    """An array on CUDA device 0 holding a's values: memory from the module on a GPU, which
    then has its own copy; under the emulated driver, a's own memory (device memory is host
    memory there). (the Producer, the host copy to read it back through)"""
    return Producer(a, device=(2, 0)), a


def test_cuda(m):
    """On the CUDA target: arrays on device 0 are taken, host ones refused, results need out=
    (an unknown framework), several results, plans replayed and rebound."""
    if not os.environ.get("FUSEC_MOCK_SMS"):
        test_cuda_frameworks(m)
        return
    x = rng.uniform(-3, 3, size=300).astype(np.float32)
    dx, _ = device_array(x)
    dy, y = device_array(np.zeros(300, np.float32))
    check(m.gelu(dx, out=dy) is dy, "cuda: out= a device array")
    m.synchronize()
    check(close(y, gelu_ref(x), "f32")[0], "cuda: gelu's values")
    check(dx.outstanding == 0 and dy.outstanding == 0, "cuda: the capsules let go")
    check_raises("cuda: a host array", lambda: m.gelu(x, out=dy), ValueError,
                 "parameter 'x': the array is on cpu:0", "target (cuda) cannot reach")
    check_raises("cuda: a device past the 64th", lambda: m.gelu(Producer(x, device=(2, 64)),
                                                                 out=dy),
                 ValueError, "on cuda:64", "CUDA devices 0 to 63")
    check_raises("cuda: no framework to make results in", lambda: m.gelu(dx), ValueError,
                 "pass out=")
    a = rng.uniform(size=(5, 7)).astype(np.float32)
    outs = [device_array(np.zeros(5, t)) for t in (np.float32, np.float32, np.int64)]
    m.stats(device_array(a)[0], out=tuple(o[0] for o in outs))
    m.synchronize()
    check(np.array_equal(outs[1][1], a.max(1)) and np.array_equal(outs[2][1], (a > 0).sum(1)),
          "cuda: several results")
    p = m.gelu.plan(dx, out=dy)
    y[:] = 0
    p()
    m.synchronize()
    check(close(y, gelu_ref(x), "f32")[0], "cuda: a plan")
    x2 = rng.uniform(size=300).astype(np.float32)
    dy2, y2 = device_array(np.zeros(300, np.float32))
    p.rebind(device_array(x2)[0], out=dy2)
    p()
    m.synchronize()
    check(close(y2, gelu_ref(x2), "f32")[0], "cuda: a plan rebound")
    p.close()
    check(dx.outstanding == 0 and dy2.outstanding == 0, "cuda: a closed plan's capsules go")
    mem = rng.uniform(-2, 2, size=(6, 9)).astype(np.float32)  # described transposed
    dt_, _ = device_array(mem.reshape(9, 6))
    dt_.strides = (1, 9)
    yv = rng.uniform(-2, 2, size=6).astype(np.float32)
    dout, out = device_array(np.zeros((9, 6), np.float32))
    m.f_f32(dt_, device_array(yv)[0], out=dout)
    m.synchronize()
    check(np.allclose(out, mem.T * yv + mem.T, rtol=1e-6), "cuda: a transposed device array")


def test_cuda_frameworks(m):
    """On a real GPU: PyTorch CUDA tensors in and out (results made on the device), a side
    stream (the launch ordered on it, no host synchronization), a plan captured into a
    torch.cuda.graph and replayed, strided device views, fusec.torch.op forward and backward on
    the device, and CuPy arrays where CuPy is installed. Not yet run on a GPU (issue 19)."""
    if torch is None or not torch.cuda.is_available():
        print("a GPU, but no PyTorch with CUDA: the framework checks are skipped")
        return
    dev = torch.device("cuda", 0)
    x = torch.rand(1 << 20, device=dev) * 6 - 3
    y = m.gelu(x)
    check(y.is_cuda and y.dtype == torch.float32, "cuda torch: the result on the device")
    check(torch.allclose(y, torch.nn.functional.gelu(x, approximate="tanh"), atol=1e-5),
          "cuda torch: gelu's values")
    out = torch.empty_like(x)
    s = torch.cuda.Stream()
    x2 = x * 2  # on the default stream
    s.wait_stream(torch.cuda.current_stream())
    with torch.cuda.stream(s):
        m.gelu(x2, out=out)  # ordered on s, the current stream
    torch.cuda.current_stream().wait_stream(s)
    check(torch.allclose(out, torch.nn.functional.gelu(x2, approximate="tanh"), atol=1e-5),
          "cuda torch: a launch on a side stream")
    # a plan made on the default stream follows the current stream when called
    p = m.gelu.plan(x, out=out)
    s.wait_stream(torch.cuda.current_stream())
    with torch.cuda.stream(s):
        x.mul_(0.5)  # on s: the plan's launch must come after it
        p()
    torch.cuda.current_stream().wait_stream(s)
    check(torch.allclose(out, torch.nn.functional.gelu(x, approximate="tanh"), atol=1e-5),
          "cuda torch: a plan called on a side stream runs on it")
    p.close()
    a, yv = torch.rand(64, 48, device=dev), torch.rand(128, device=dev)[::2]
    got = m.f_f32(a.t(), yv)  # a transposed matrix and a strided vector, read in place
    check(got.shape == (48, 64) and torch.allclose(got, a.t() * yv + a.t(), rtol=1e-6),
          "cuda torch: transposed and strided device views")
    # a plan inside a CUDA graph capture: replays with the graph
    xs, ys = torch.rand(4096, device=dev), torch.empty(4096, device=dev)
    m.gelu(xs, out=ys)  # built and warm before the capture
    g = torch.cuda.CUDAGraph()
    s2 = torch.cuda.Stream()
    s2.wait_stream(torch.cuda.current_stream())
    with torch.cuda.stream(s2):
        with torch.cuda.graph(g):
            m.gelu(xs, out=ys)
    torch.cuda.current_stream().wait_stream(s2)
    xs.copy_(torch.rand(4096, device=dev))
    g.replay()
    torch.cuda.synchronize()
    check(torch.allclose(ys, torch.nn.functional.gelu(xs, approximate="tanh"), atol=1e-5),
          "cuda torch: a launch captured in a CUDA graph, replayed on new values")
    test_cuda_capture_plans(m)
    try:
        import fusec.torch
        src = open(os.path.join(SRC, "tests", "programs", "grad.fuse")).read()
        mg = fusec.compile_string(src, target="cuda")
        op = fusec.torch.op(mg.layernorm, "fusecgpu::layernorm")
        xt = torch.randn(32, 256, device=dev, requires_grad=True)
        w = torch.randn(256, device=dev, requires_grad=True)
        b = torch.randn(256, device=dev, requires_grad=True)
        op(xt, w, b).square().sum().backward()
        x2, w2, b2 = (t.detach().clone().requires_grad_(True) for t in (xt, w, b))
        torch.nn.functional.layer_norm(x2, (256,), w2, b2, 1e-5).square().sum().backward()
        check(all(torch.allclose(u.grad, v.grad, rtol=1e-4, atol=1e-4)
                  for u, v in ((xt, x2), (w, w2), (b, b2))),
              "cuda torch: fusec.torch.op layernorm's gradients on the device")
    except ImportError as e:
        check(False, "fusec.torch: %s" % e)
    try:
        import cupy
    except ImportError:
        print("no CuPy: its checks are skipped")
        return
    xc = cupy.random.rand(1000, dtype=cupy.float32)
    yc = m.gelu(xc)
    check(isinstance(yc, cupy.ndarray) and float(abs(yc - 0.5 * xc * (1 + cupy.tanh(
        0.7978845608028654 * (xc + 0.044715 * xc ** 3)))).max()) < 1e-5, "cupy: gelu")


def capture(g, body):
    """body() captured into CUDA graph g by torch.cuda.graph (global mode, on a non-blocking
    stream of PyTorch's) from a side stream; None, or why the capture failed."""
    s = torch.cuda.Stream()
    s.wait_stream(torch.cuda.current_stream())
    try:
        with torch.cuda.stream(s):
            with torch.cuda.graph(g):
                body()
    except Exception as e:  # noqa: BLE001  (an invalidated capture: a RuntimeError at its end)
        return "%s: %s" % (type(e).__name__, e)
    finally:
        torch.cuda.current_stream().wait_stream(s)
    return None


def test_cuda_capture_plans(m):
    """On a real GPU (from test_cuda_frameworks): a plan made and called inside
    torch.cuda.graph, whose scratch (--no-fuse's intermediates) must be taken outside the
    capture without synchronizing it, replayed with the graph on new values; and a plan freed
    during a capture, as the garbage collector may, after a call outside it, which must leave
    the capture intact. Not yet run on a GPU (issue 28)."""
    dev = torch.device("cuda", 0)
    gelu = lambda t: torch.nn.functional.gelu(t, approximate="tanh")  # noqa: E731
    mn = fusec.compile_string(PROGRAM, target="cuda", fuse=False, name="capture.fuse")
    xs, ys = torch.rand(4096, device=dev), torch.empty(4096, device=dev)
    mn.gelu(xs, out=ys)  # built and warm before the capture
    g, made = torch.cuda.CUDAGraph(), []

    def make_and_call():
        made.append(mn.gelu.plan(xs, out=ys))
        made[0]()

    why = capture(g, make_and_call)
    check(why is None, "cuda torch: a plan made and called inside a capture: %s" % why)
    if why is None:
        xs.copy_(torch.rand(4096, device=dev) * 6 - 3)
        g.replay()
        torch.cuda.synchronize()
        check(torch.allclose(ys, gelu(xs), atol=1e-5),
              "cuda torch: a plan made inside a capture, replayed on new values")
    del g  # the captured graph before the plan whose scratch it uses
    for p in made:
        p.close()
    q = mn.gelu.plan(xs, out=ys)
    q()  # a call outside the capture, which its free comes after
    zs = torch.empty(4096, device=dev)
    g2 = torch.cuda.CUDAGraph()
    why = capture(g2, lambda: (m.gelu(xs, out=zs), q.close()))
    check(why is None, "cuda torch: a plan freed during a capture: %s" % why)
    if why is None:
        g2.replay()
        torch.cuda.synchronize()
        check(torch.allclose(zs, gelu(xs), atol=1e-5),
              "cuda torch: the capture a plan was freed in, replayed")
    mn.close()


# ---- the cache, fusec.torch, the README -------------------------------------------------------

def test_cache_warning():
    """A cache directory that cannot be created (under a file: root cannot either): the compile
    still works, with one fusec.CacheWarning, the command line's warning, pointed at the
    caller of compile_string."""
    with tempfile.TemporaryDirectory(prefix="fusec-test-") as d:
        blocker = os.path.join(d, "a-file")
        open(blocker, "w").close()
        with warnings.catch_warnings(record=True) as got:
            warnings.simplefilter("always")
            m2 = fusec.compile_string("fn inc(x: f32[N]) -> f32[N] { return x + 1.0; }",
                                      target=TARGET, cache_dir=os.path.join(blocker, "cache"))
    ws = [w for w in got if issubclass(w.category, fusec.CacheWarning)]
    check(len(ws) == 1 and "cannot be created" in str(ws[0].message) and
          blocker in str(ws[0].message), "an unusable cache directory warns once: %s"
          % [str(w.message) for w in got])
    check(not ws or ws[0].filename == os.path.abspath(__file__),
          "the warning points at the caller (%s)" % (ws[0].filename if ws else None))
    check(m2.functions == ("inc",), "the module compiles all the same")


def test_torch_attribute():
    """fusec.torch after `import fusec` alone, as SPEC §3b spells it (fusec.torch.op), without
    `import fusec` importing PyTorch; without PyTorch, an ImportError that says so."""
    rc, said = python("import sys\n"
                     "sys.modules['torch'] = None  # as if PyTorch were not installed\n"
                     "import fusec\n"
                     "try:\n"
                     "    fusec.torch\n"
                     "except ImportError as e:\n"
                     "    print('ImportError:', e)\n")
    check(rc == 0 and "ImportError: fusec.torch needs PyTorch" in said,
          "fusec.torch without PyTorch (status %d): %s" % (rc, said[-2000:]))
    # (not under the sanitizers: a new interpreter importing PyTorch with their run-time
    # library preloaded takes seconds to test Python's import logic, which the plain pass has)
    if torch is None or os.environ.get("FUSEC_PY_SANITIZED"):
        return
    rc, said = python("import sys, fusec\n"
                     "print('torch imported:', 'torch' in sys.modules)\n"
                     "op = fusec.torch.op\n"
                     "print('op:', op.__module__, 'torch' in sys.modules)\n")
    check(rc == 0 and "torch imported: False" in said and "op: fusec.torch True" in said,
          "fusec.torch.op after `import fusec` alone, PyTorch imported then (status %d): %s"
          % (rc, said[-2000:]))


def test_readme():
    """The README's first Python example runs as written, from the repository's root."""
    with open(os.path.join(SRC, "README.md")) as f:
        text = f.read()
    block = text.split("```python\n", 1)[1].split("```", 1)[0]
    rc, said = python(block)
    check(rc == 0, "the README's Python example (status %d): %s" % (rc, said[-2000:]))


def main():
    print("libfusec: %s" % fusec.LIBRARY_PATH)
    m = fusec.compile_string(PROGRAM, target=TARGET, name="test_package.fuse")
    if TARGET == "cuda":
        test_cuda(m)
        test_cache_warning()
        finish()
    for test in (test_module, test_compile_errors, test_dtypes, test_numbers, test_out,
                 test_plans, test_errors, test_dlpack, test_strides, test_leak, test_threads,
                 test_torch, test_cache_warning, test_torch_attribute, test_readme):
        print(test.__name__)
        if test.__code__.co_argcount:
            test(m)
        else:
            test()
    finish()


if __name__ == "__main__":
    main()
