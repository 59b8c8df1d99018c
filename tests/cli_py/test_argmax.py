"""tests/cli_py/test_argmax.py: argmax and argmin (SPEC §1) against numpy's, exactly, on the
reference interpreter and on FUSEC_TEST_TARGET (default cpu; cuda: the GPU or the emulated
one), fused and --no-fuse: over rows, columns (short and tall, the latter long enough for
the plan to cut columns into pieces), a middle axis, and everything (the flat row-major
index); f32 with many ties, NaNs (the first NaN wins) and signed zeros (equal, so the first),
f64, integers, bools; a row's max and argmax from one kernel; odd sizes. Over an empty axis
a launch fails."""
import os
import sys

sys.path.insert(0, os.path.dirname(__file__))
from fusectest import check, finish, fusec_run, np, target_or_skip, tmpdir  # noqa: E402

TARGET = target_or_skip()
OUT = tmpdir()
PROGRAM = os.path.join(OUT, "arg.fuse")
with open(PROGRAM, "w") as f:
    f.write("""
fn rows(x: f32[R, C]) -> (i64[R, 1], i64[R, 1], f32[R, 1]) {
    return argmax(x, axis=1), argmin(x, axis=-1), max(x, axis=1);
}
fn cols(x: f32[R, C]) -> (i64[1, C], i64[1, C]) {
    return argmax(x, axis=0), argmin(x, axis=0);
}
fn flat(x: f32[R, C]) -> (i64[], i64[]) {
    return argmax(x), argmin(x);
}
fn middle(x: f64[A, B, C]) -> i64[A, 1, C] {
    return argmax(x * 2.0, axis=1);
}
fn ints(x: i32[R, C]) -> (i64[R, 1], i64[1, C]) {
    return argmin(x, axis=1), argmax(x, axis=0);
}
fn bools(x: bool[R, C]) -> i64[R, 1] {
    return argmax(x, axis=1);
}
""")
rng = np.random.default_rng(11)


def save(name, a):
    p = os.path.join(OUT, name + ".npy")
    np.save(p, a)
    return p


def run(fn, inp, n, target, nofuse):
    outs = [os.path.join(OUT, f"{fn}_{target}_{nofuse}_{i}.npy") for i in range(n)]
    rc, err = fusec_run(PROGRAM, fn, [("x", inp)], outs, target, ["--no-fuse"] if nofuse else [])
    check(rc == 0, f"{fn} on {target}: exit {rc}: {err}")
    return [np.load(o) for o in outs] if rc == 0 else None


def floats(shape, dtype):
    """Few distinct values (ties everywhere), some NaNs, zeros of both signs."""
    x = rng.integers(-3, 4, shape).astype(dtype)
    flat = x.reshape(-1)
    k = flat.size
    flat[rng.integers(0, k, max(1, k // 97))] = np.nan
    flat[rng.integers(0, k, max(1, k // 50))] = -0.0
    return x


def expect(tag, got, want):
    ok = got is not None and got.dtype == np.int64 and got.shape == want.shape and \
        np.array_equal(got, want)
    if not ok and got is not None and got.shape == want.shape:
        bad = np.argwhere(got != want)
        tag += f": at {tuple(bad[0])} got {got[tuple(bad[0])]}, want {want[tuple(bad[0])]}" \
            if bad.size else f": dtype {got.dtype}"
    check(ok, tag)


for R, C in ((1, 1), (5, 7), (37, 1001), (1031, 5), (1, 4099)):
    x = floats((R, C), np.float32)
    # a row of zeros of both signs, and a row whose only extreme is a NaN
    x[R // 2, :] = -0.0
    x[R // 2, C // 2] = 0.0
    xi = rng.integers(-5, 6, (R, C)).astype(np.int32)
    xb = rng.random((R, C)) < 0.02
    px, pi, pb = save(f"x{R}", x), save(f"i{R}", xi), save(f"b{R}", xb)
    for target in sorted({"ref", TARGET}):
        for nofuse in (False, True):
            tag = f"[{R}, {C}] on {target}{' --no-fuse' if nofuse else ''}"
            r = run("rows", px, 3, target, nofuse)
            if r:
                expect(f"rows argmax {tag}", r[0], np.argmax(x, axis=1)[:, None])
                expect(f"rows argmin {tag}", r[1], np.argmin(x, axis=1)[:, None])
            r = run("cols", px, 2, target, nofuse)
            if r:
                expect(f"cols argmax {tag}", r[0], np.argmax(x, axis=0)[None, :])
                expect(f"cols argmin {tag}", r[1], np.argmin(x, axis=0)[None, :])
            r = run("flat", px, 2, target, nofuse)
            if r:
                expect(f"flat argmax {tag}", r[0], np.array(np.argmax(x)))
                expect(f"flat argmin {tag}", r[1], np.array(np.argmin(x)))
            r = run("ints", pi, 2, target, nofuse)
            if r:
                expect(f"ints argmin {tag}", r[0], np.argmin(xi, axis=1)[:, None])
                expect(f"ints argmax {tag}", r[1], np.argmax(xi, axis=0)[None, :])
            r = run("bools", pb, 1, target, nofuse)
            if r:
                expect(f"bools argmax {tag}", r[0], np.argmax(xb, axis=1)[:, None])

x3 = floats((3, 517, 5), np.float64)
p3 = save("x3", x3)
for target in sorted({"ref", TARGET}):
    for nofuse in (False, True):
        r = run("middle", p3, 1, target, nofuse)
        if r:
            expect(f"middle on {target}{' --no-fuse' if nofuse else ''}", r[0],
                   np.argmax(x3 * 2.0, axis=1)[:, None, :])

# over an empty axis: an error at launch, on every target
pe = save("empty", np.zeros((3, 0), np.float32))
for target in sorted({"ref", TARGET}):
    outs = [os.path.join(OUT, f"e{i}.npy") for i in range(3)]
    rc, err = fusec_run(PROGRAM, "rows", [("x", pe)], outs, target)
    check(rc != 0 and "over an empty axis" in err, f"argmax over an empty axis on {target}: "
          f"exit {rc}: {err}")

finish()
