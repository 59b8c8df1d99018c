"""tests/cli_py/test_cli_views.py: `fusec run --in x=FILE.npy[VIEW]`, inputs read in place through
strides (SPEC §3), against numpy applying the same view: transposed, sliced with steps and
negative bounds, reversed, indexed (an axis dropped), a new axis, '...', broadcast_to (stride
0), and chains of them; on the reference interpreter and FUSEC_TEST_TARGET (default cpu; cuda
under the emulated driver: emu.cli_views), fused and --no-fuse. Then views that make no sense:
exit 1 with the reason."""
import os
import sys

sys.path.insert(0, os.path.dirname(__file__))
from fusectest import (check, close, finish, fusec_run, np, run, target_or_skip,  # noqa: E402
                       tmpdir)

TARGET = target_or_skip()
d = tmpdir()
prog = os.path.join(d, "views.fuse")
with open(prog, "w") as f:
    f.write("fn f(x: f32[R, C], y: f64[C]) -> (f32[R, C], f64[R], f32[C]) {\n"
            "    return x * 2.0 + f32(y), sum(f64(x) * y, axis=1), max(x, axis=0);\n"
            "}\n")

rng = np.random.default_rng(5)
a = rng.uniform(-4, 4, size=(9, 13)).astype(np.float32)
b = rng.uniform(-4, 4, size=(5, 7, 3)).astype(np.float32)
v = rng.uniform(-4, 4, size=40)
pa, pb, pv = (os.path.join(d, n) for n in ("a.npy", "b.npy", "v.npy"))
np.save(pa, a)
np.save(pb, b)
np.save(pv, v)


def numpy_view(arr, view):
    """The view as numpy computes it (broadcast_to is a function there, not a method)."""
    ns = {"a": arr, "np": np}
    expr = "a" + view
    if ".broadcast_to(" in view:
        head, args = view.split(".broadcast_to(")
        expr = "np.broadcast_to(a%s, (%s)" % (head, args)
    return eval(expr, ns)


# (file, its array, view of x; view of v, which must give x's columns)
CASES = [
    (pa, a, "", "[:13]"),
    (pa, a, ".T", "[::-1][:9]"),
    (pa, a, "[::2, 1::3]", "[3:7]"),
    (pa, a, "[::-1, ::-1]", "[::3][:13]"),
    (pa, a, "[-2:1:-3, 5:]", "[-8:]"),
    (pa, a, "[1:8][::2].T", "[::10]"),
    (pa, a, "[4][None]", "[20:33]"),
    (pa, a, "[None, 3].broadcast_to(6, 13)", "[1::3][:13]"),
    (pa, a, "[:, 2:3].broadcast_to(9, 11)", "[5:16]"),
    (pb, b, "[:, 2]", "[::-2][:3]"),
    (pb, b, "[1, ::-2, :].T", "[:4]"),
    (pb, b, "[:, :, 0]", "[:7]"),
    # '...': as many whole axes as the other items leave, wherever it stands
    (pa, a, "[...]", "[...][:13]"),
    (pa, a, "[..., ::2]", "[..., 3:10]"),
    (pa, a, "[1:, ...]", "[:13]"),
    (pb, b, "[..., 1]", "[:7]"),
    (pb, b, "[2, ..., ::-1]", "[..., -3:]"),
    (pb, b, "[..., None][1, :, 0]", "[:1]"),
    (pb, b, "[None, ..., 0][0]", "[:7]"),
    (pb, b, "[1, ..., 2, None].T", "[:7]"),
]


def results(files, target, extra, tag):
    outs = [os.path.join(d, f"{tag}_out{i}.npy") for i in range(3)]
    rc, err = fusec_run(prog, "f", files, outs, target, extra)
    return (None, err) if rc else ([np.load(p) for p in outs], "")


for k, (path, arr, xv, yv) in enumerate(CASES):
    x = numpy_view(arr, xv)
    y = numpy_view(v, yv)
    want = (x * 2 + y.astype(np.float32), (x.astype(np.float64) * y).sum(axis=1), x.max(axis=0))
    files = [("x", path + xv), ("y", pv + yv)]
    for target in ("ref", TARGET):
        for extra in ((), ("--no-fuse",)):
            what = f"{target} {' '.join(extra)} x={os.path.basename(path)}{xv} y=v.npy{yv}"
            got, err = results(files, target, extra, f"c{k}{target}{len(extra)}")
            if got is None:
                check(False, f"{what}: {err}")
                continue
            for i, dt in enumerate(("f32", "f64", "f32")):
                ok, why = close(got[i], want[i], dt)
                check(got[i].shape == want[i].shape and ok,
                      f"{what}: result {i} {got[i].shape} vs {want[i].shape}: {why}")

# views that make no sense, and one that gives the wrong shape: exit 1 and why
for view, needle in [("[9]", "index 9 is out of bounds for axis 0 with size 9"),
                     ("[::0]", "a slice step of 0"), ("[1, 2, 3]", "more indices than axes"),
                     ("[", "expected an index"), (".Q", "expected [...], .T or .broadcast_to"),
                     (".broadcast_to(9, 2)", "neither the same size nor 1"),
                     (".broadcast_to(13)", "fewer dims than the array has axes"),
                     ("[None, None, None, None, None, None, None]", "more than 8 axes"),
                     ("[::99999999999999999999]", "out of range"),
                     ("[0]", "expected rank 2, got rank 1"),
                     ("[..., ...]", "a second '...'"), ("[..., 1, 2, 3]", "more indices than axes"),
                     ("[1, ..., 2, 3]", "more indices than axes"), ("[.., 1]", "expected an index"),
                     ("[..., 13]", "index 13 is out of bounds for axis 1 with size 13")]:
    rc, _, err = run(["run", prog, "-f", "f", f"--target={TARGET}", "--in", f"x={pa}{view}",
                      "--in", f"y={pv}[:13]"])
    check(rc == 1 and needle in err and "Sanitizer" not in err,
          f"view {view}: exit {rc}, want 1 and {needle!r}:\n{err}")
# a file whose name has ".npy" inside it is still found
odd = os.path.join(d, "x.npy.d.npy")
np.save(odd, a)
rc, out, err = run(["run", prog, "-f", "f", f"--target={TARGET}", "--in", f"x={odd}.T",
                    "--in", f"y={pv}[:9]"])
check(rc == 0 and "f32[13, 9]" in out, f"a file named x.npy.d.npy: {rc} {out}{err}")
finish()
