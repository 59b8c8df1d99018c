"""tests/cli_py/test_cli_npy.py: how `fusec run` reads .npy files, against numpy: 64-bit integers
converted to each parameter dtype as numpy's astype converts them (uint64 values from 2^63 up
are no negative numbers; a float is rounded once from the exact integer, never through a
double first), bf16 rounded to nearest even from the exact value; Fortran-order files (of
several dtypes, big-endian too), alone and under views of the command line, on the reference
interpreter and FUSEC_TEST_TARGET (default cpu)."""
import os
import sys

sys.path.insert(0, os.path.dirname(__file__))
from fusectest import check, close, finish, fusec_run, np, run, target_or_skip, tmpdir  # noqa

TARGET = target_or_skip()

d = tmpdir()
DTYPES = ["bool", "i32", "i64", "f16", "bf16", "f32", "f64"]
prog = os.path.join(d, "ident.fuse")
with open(prog, "w") as f:
    for t in DTYPES:
        f.write(f"fn id_{t}(x: {t}[N]) -> {t}[N] {{\n    return x;\n}}\n")


def run_to(t, path):
    """fusec run of id_t on path: the result as numpy reads it, or None (reported)."""
    out = os.path.join(d, f"out_{t}.npy")
    if os.path.exists(out):
        os.remove(out)
    rc, _, err = run(["run", prog, "-f", f"id_{t}", "--target=ref", "--in", f"x={path}",
                      "--out", out])
    check(rc == 0, f"id_{t} of {os.path.basename(path)}: exit {rc}\n{err}")
    return np.load(out) if rc == 0 else None


def bf16_of_int(v):
    """The integer v rounded to bf16's 8 significant bits, to nearest even, exactly."""
    m = abs(v)
    s = max(m.bit_length() - 8, 0)
    q, r = divmod(m, 1 << s)
    if s and (r > 1 << (s - 1) or (r == 1 << (s - 1) and q & 1)):
        q += 1
    return float(q << s) * (-1 if v < 0 else 1)


def want(values, dtype, t):
    a = np.array(values, dtype=dtype)
    if t == "bf16":
        return np.array([bf16_of_int(int(v)) for v in values], dtype=np.float32)
    numpy_t = {"bool": np.bool_, "i32": np.int32, "i64": np.int64, "f16": np.float16,
               "f32": np.float32, "f64": np.float64}[t]
    with np.errstate(over="ignore"):
        return a.astype(numpy_t)


# where rounding through a double first goes wrong: 2^63 + 2^39 + 1 is a double's 2^63 + 2^39,
# a tie in f32 that rounds to 2^63, where the value itself rounds up to 2^63 + 2^40;
# 2^63 + 2^55 + 1 the same in bf16
U64 = [0, 1, 7, 2**53 + 1, 2**63 - 1, 2**63, 2**63 + 1, 2**63 + 2**39 + 1, 2**63 + 2**55 + 1,
       12345678901234567890, 2**64 - 2**11, 2**64 - 1]
I64 = [0, -1, 2**62 + 2**38 + 1, -(2**62 + 2**38 + 1), 2**62 + 2**54 + 1, -2**63, 2**63 - 1]
for name, values, dtype in [("u64", U64, np.uint64), ("i64", I64, np.int64),
                            ("u64be", U64, ">u8")]:
    path = os.path.join(d, f"{name}.npy")
    np.save(path, np.array(values, dtype=dtype))
    for t in DTYPES:
        got, w = run_to(t, path), want(values, dtype, t)
        if got is None:
            continue
        same = got.shape == w.shape and np.array_equal(got, w, equal_nan=False)
        check(same, f"{name} as {t}: got {got.tolist()}, numpy gives {w.tolist()}")

# 2^64 - 1 prints as numpy prints it in f32, not as a negative number
path = os.path.join(d, "max.npy")
np.save(path, np.array([2**64 - 1], dtype=np.uint64))
rc, so, err = run(["run", prog, "-f", "id_f32", "--target=ref", "--in", f"x={path}"])
check(rc == 0 and "= 1.84467441e+19\n" in so, f"uint64 2^64 - 1 as f32: {so}{err}")

# Fortran order: numpy saves an array that is column-major only with 'fortran_order': True;
# fusec reads it as numpy does, its data through the strides of that order
fprog = os.path.join(d, "fortran.fuse")
with open(fprog, "w") as f:
    f.write("fn r2(x: f32[A, B]) -> (f32[A, B], f32[A]) {\n"
            "    return x * 2.0, sum(x, axis=1);\n}\n"
            "fn r3(x: f32[A, B, C]) -> (f32[A, B, C], f32[A, B]) {\n"
            "    return x * 2.0, sum(x, axis=2);\n}\n")
rng = np.random.default_rng(29)
F_CASES = [((4, 5), np.float32, ""), ((3, 4, 5), np.float64, ""), ((3, 4, 5), ">i4", ""),
           ((6, 7), np.float32, "[::2, ::-1]"), ((6, 7), np.float16, ".T"),
           ((3, 4, 5), np.float32, "[1]"), ((3, 4, 5), np.int64, "[:, ::2, 1:4]"),
           ((2, 3, 4, 5), np.float32, "[1, :, :, 2]"), ((1, 5), np.float32, ""),
           ((4, 1), np.float32, "[::-1].T")]
for k, (shape, dtype, view) in enumerate(F_CASES):
    a = np.asfortranarray(rng.integers(-50, 50, size=shape).astype(dtype))
    path = os.path.join(d, f"f{k}.npy")
    np.save(path, a)
    with open(path, "rb") as f:
        fortran = b"'fortran_order': True" in f.read(128)
    check(fortran or 1 in shape, f"{shape} {dtype}: numpy saved it in C order")
    x = eval("a" + view, {"a": a}).astype(np.float32)
    fn = "r3" if x.ndim == 3 else "r2"
    for target in ("ref", TARGET):
        outs = [os.path.join(d, f"f{k}_{target}_{i}.npy") for i in range(2)]
        rc, err = fusec_run(fprog, fn, [("x", path + view)], outs, target)
        what = f"{target}: Fortran-order {shape} {np.dtype(dtype)}{view}"
        if rc != 0:
            check(False, f"{what}: exit {rc}\n{err}")
            continue
        got = [np.load(p) for p in outs]
        check(np.array_equal(got[0], x * 2), f"{what}: x * 2 is\n{got[0]}\nwant\n{x * 2}")
        ok, why = close(got[1], x.astype(np.float64).sum(axis=-1), "f32")
        check(ok, f"{what}: sum: {why}")

finish()
