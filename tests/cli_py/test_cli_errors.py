"""tests/cli_py/test_cli_errors.py: the command line's answers to bad input and bad usage: a
clear message and the SPEC's exit code (1 input, 2 usage), never a crash."""
import os
import subprocess
import sys

sys.path.insert(0, os.path.dirname(__file__))
from fusectest import check, finish, fusec_env, np, run, tmpdir, FUSEC, SRC  # noqa: E402

d = tmpdir()
GELU = os.path.join(SRC, "examples", "gelu.fuse")
SOFTMAX = os.path.join(SRC, "examples", "softmax.fuse")
LAYERNORM = os.path.join(SRC, "examples", "layernorm.fuse")


def expect(args, code, *needles, stream="stderr", env=None):
    rc, so, se = run(args, env=env)
    text = se if stream == "stderr" else so
    check(rc == code, f"fusec {' '.join(args)}: exit {rc}, want {code}\n{se}")
    for n in needles:
        check(n in text, f"fusec {' '.join(args)}: {n!r} not in output:\n{text}")
    check("Sanitizer" not in se and "runtime error" not in se, f"sanitizer report: {se}")
    return so, se


x = os.path.join(d, "x.npy")
np.save(x, np.ones(5, dtype=np.float32))
m = os.path.join(d, "m.npy")
np.save(m, np.ones((2, 3), dtype=np.float32))
v3 = os.path.join(d, "v3.npy")
np.save(v3, np.ones(3, dtype=np.float32))
v4 = os.path.join(d, "v4.npy")
np.save(v4, np.ones(4, dtype=np.float32))
garbage = os.path.join(d, "garbage.npy")
with open(garbage, "wb") as f:
    f.write(b"\x93NUMPY\x01\x00\xff\xff{'descr': '<f4'")
strs = os.path.join(d, "strs.npy")
np.save(strs, np.array(["a", "b"]))

# help, version, usage
expect(["--help"], 0, "usage: fusec", "[..., 1]", stream="stdout")
expect(["--version"], 0, "fusec 0.7.0", stream="stdout")
expect([], 2, "no input file")
expect(["--bogus", GELU], 2, "unknown option '--bogus'")
expect(["--target=gpu", GELU], 2, "unknown target 'gpu'")
expect(["--emit=asm", GELU], 2, "unknown --emit kind 'asm'")
expect(["--target"], 2, "--target needs a value")
expect(["run", GELU], 2, "run needs -f")
expect(["run", GELU, "-f"], 2, "-f needs a function name")
expect(["run", GELU, "-f", "gelu", "--in", "x"], 2, "--in needs NAME=FILE.npy")

# the kernel plan, for either target (the reference's is the CPU's)
for t in ("cpu", "cuda", "ref"):
    expect(["--emit=plan", "--target=" + t, SOFTMAX], 0, "row over [R, C] reducing (1)",
           "sweep 1: sum %", "check: max %", stream="stdout")

# files
expect([os.path.join(d, "missing.fuse")], 1, "cannot open", "missing.fuse")
expect(["run", os.path.join(d, "missing.fuse"), "-f", "gelu"], 1, "cannot open")

# run: inputs that do not fit
expect(["run", GELU, "-f", "nope", "--target=ref"], 1, "no function 'nope'", "gelu")
expect(["run", GELU, "-f", "gelu", "--target=ref"], 1, "missing input for parameter 'x'")
expect(["run", GELU, "-f", "gelu", "--target=ref", "--in", "x=" + x, "--in", "y=" + x], 1,
       "has no parameter 'y'")
expect(["run", GELU, "-f", "gelu", "--target=ref", "--in", "x=" + m], 1, "parameter 'x'", "rank")
expect(["run", GELU, "-f", "gelu", "--target=ref", "--in", "x=" + os.path.join(d, "no.npy")], 1,
       "parameter 'x'", "cannot open")
expect(["run", GELU, "-f", "gelu", "--target=ref", "--in", "x=" + garbage], 1, "parameter 'x'")
expect(["run", GELU, "-f", "gelu", "--target=ref", "--in", "x=" + GELU], 1, "not a .npy file")
expect(["run", GELU, "-f", "gelu", "--target=ref", "--in", "x=" + strs], 1, "unsupported dtype")
# symbolic dims must agree: w is [C] with C = 3 from x, but 4 given
expect(["run", LAYERNORM, "-f", "layernorm", "--target=ref", "--in", "x=" + m, "--in",
        "w=" + v4, "--in", "b=" + v3], 1, "parameter 'w'")
expect(["run", GELU, "-f", "gelu", "--target=ref", "--in", "x=" + x, "--out", "a.npy", "--out",
        "b.npy"], 1, "1 result but 2 --out")
expect(["run", GELU, "-f", "gelu", "--target=ref", "--in", "x=" + x, "--out",
        os.path.join(d, "nodir", "y.npy")], 1, "cannot write")

# a run with no --out prints the values
so, _ = expect(["run", GELU, "-f", "gelu", "--target=ref", "--in", "x=" + x], 0,
               stream="stdout")
check("result 0: f32[5] =" in so and "0.841" in so, f"printed values: {so}")


def npy_header(shape, descr="<f4"):
    """A version 1 .npy header for shape, with no data after it."""
    h = "{'descr': '%s', 'fortran_order': False, 'shape': %s, }" % (descr, shape)
    h += " " * ((64 - (10 + len(h) + 1) % 64) % 64) + "\n"
    return b"\x93NUMPY\x01\x00" + len(h).to_bytes(2, "little") + h.encode()


def write(path, data):
    with open(path, "wb" if isinstance(data, bytes) else "w") as f:
        f.write(data)
    return path


# sizes from --dim and .npy headers that overflow an element or byte count are errors, not a
# wrapped allocation (2^62 f32 is 2^64 bytes: the size wrapped to 0 and the fill overran it)
expect(["bench", GELU, "-f", "gelu", "--target=ref", "--dim", "N=4611686018427387904"], 1,
       "parameter 'x' is too large", "f32[4611686018427387904]")
expect(["bench", SOFTMAX, "-f", "softmax", "--target=ref", "--dim", "R=1099511627776", "--dim",
        "C=1099511627776"], 1, "parameter 'x' is too large")
# 2^61 f32 is 2^63 bytes, past C's largest object (PTRDIFF_MAX): too large, exit 1, not "out of
# memory", exit 3 (and not a malloc of it, on which the ASan build aborted)
expect(["bench", GELU, "-f", "gelu", "--target=ref", "--dim", "N=2305843009213693952"], 1,
       "parameter 'x' is too large", "f32[2305843009213693952]", "can address")
# countable, but more than any machine's memory (2^52 bytes): said before anything is allocated
expect(["bench", GELU, "-f", "gelu", "--target=ref", "--dim", "N=1125899906842624"], 1,
       "parameter 'x' is too large", "needs 4503599627370496 bytes", "this machine's memory")
huge = write(os.path.join(d, "huge.npy"), npy_header((1 << 40, 1 << 40)))
expect(["run", GELU, "-f", "gelu", "--target=ref", "--in", "x=" + huge], 1, "parameter 'x'",
       "array too large")
# empty inputs whose result broadcasts into more than can be counted: [2^40, 2^40, 0]
outer = write(os.path.join(d, "outer.fuse"),
              "fn outer(a: f32[A, 1, Z], b: f32[B, Z]) -> f32[A, B, Z] {\n"
              "    return a + b;\n}\n")
ea = write(os.path.join(d, "ea.npy"), npy_header((1 << 40, 1, 0)))
eb = write(os.path.join(d, "eb.npy"), npy_header((1 << 40, 0)))
expect(["run", outer, "-f", "outer", "--target=ref", "--in", "a=" + ea, "--in", "b=" + eb], 1,
       "result 0 is too large")
# small inputs whose result broadcasts into more than any machine's memory: [2^21, 2^21, 1] f32
# (16 TiB) from two files of 8 MiB
ba, bb = os.path.join(d, "ba.npy"), os.path.join(d, "bb.npy")
np.save(ba, np.zeros((1 << 21, 1, 1), dtype=np.float32))
np.save(bb, np.zeros((1 << 21, 1), dtype=np.float32))
expect(["run", outer, "-f", "outer", "--target=ref", "--in", "a=" + ba, "--in", "b=" + bb], 1,
       "result 0 is too large", "f32[2097152, 2097152, 1]", "this machine's memory")
os.remove(ba)
os.remove(bb)

# a header that claims more data than the file holds is truncated, found before allocating
# (32 GB asked for: "out of memory" said nothing about the file)
claims = write(os.path.join(d, "claims.npy"), npy_header((8000000000,)) + bytes(20))
expect(["run", GELU, "-f", "gelu", "--target=ref", "--in", "x=" + claims], 1, "parameter 'x'",
       "truncated", "32000000000 bytes", "holds 20")


# a failed write of stdout is an error, whichever command wrote it (the buffer reaches the
# device only at exit, so this is found there)
def expect_full(args, what):
    with open("/dev/full", "w") as full:
        p = subprocess.run([FUSEC] + args, stdout=full, stderr=subprocess.PIPE, text=True,
                           timeout=600, env=fusec_env())
    check(p.returncode == 1, f"{what} > /dev/full: exit {p.returncode}, want 1\n{p.stderr}")
    check(p.stderr.count("cannot write 'stdout'") == 1,
          f"{what} > /dev/full: want one 'cannot write' message:\n{p.stderr}")


if os.path.exists("/dev/full"):
    expect_full(["run", GELU, "-f", "gelu", "--target=ref", "--in", "x=" + x], "run")
    expect_full(["--emit=ir", GELU], "--emit=ir")
    expect_full(["--help"], "--help")
    expect_full(["--version"], "--version")
    expect_full(["cache", "stats"], "cache stats")
    expect_full(["bench", GELU, "-f", "gelu", "--target=ref", "--dim", "N=64", "--reps", "1"],
                "bench")

# an output that is an input is refused before anything is written, by name or by identity
src = write(os.path.join(d, "src.fuse"), open(GELU).read())
before = open(src, "rb").read()
os.symlink(src, os.path.join(d, "link.fuse"))
xin = os.path.join(d, "xin.npy")
np.save(xin, np.ones(5, dtype=np.float32))
xbytes = open(xin, "rb").read()
expect(["--emit=ir", "-o", src, src], 2, f"-o '{src}' is the source file")
expect(["--emit=ir", "-o", os.path.join(d, "link.fuse"), src], 2, "is the source file")
expect(["--emit=ir", "-o", os.path.join(d, ".", "src.fuse"), src], 2, "is the source file")
expect(["run", src, "-f", "gelu", "--target=ref", "--in", "x=" + xin, "--out", src], 2,
       f"--out '{src}' is the source file")
expect(["run", src, "-f", "gelu", "--target=ref", "--in", "x=" + xin, "--out",
        os.path.join(d, ".", "xin.npy")], 2, "is the input file", "(--in x)")
check(open(src, "rb").read() == before, "the source file was overwritten")
check(open(xin, "rb").read() == xbytes, "the --in file was overwritten")

# integers print exactly, bools as 0/1, floats as before
ints = write(os.path.join(d, "ints.fuse"),
             "fn f(x: i32[N]) -> (i32[N], i64[N], bool[N], f32[N]) {\n"
             "    return x, i64(x) * 4294967296, x > 0, f32(x);\n}\n")
xi = os.path.join(d, "xi.npy")
np.save(xi, np.array([2147483647, -2147483648, 0, 7], dtype=np.int32))
so, _ = expect(["run", ints, "-f", "f", "--target=ref", "--in", "x=" + xi], 0, stream="stdout")
check("result 0: i32[4] = 2147483647 -2147483648 0 7\n" in so, f"i32 printed: {so}")
check("result 1: i64[4] = 9223372032559808512 -9223372036854775808 0 30064771072\n" in so,
      f"i64 printed: {so}")
check("result 2: bool[4] = 1 0 0 1\n" in so, f"bool printed: {so}")
check("result 3: f32[4] = 2.14748365e+09 -2.14748365e+09 0 7\n" in so, f"f32 printed: {so}")

# the same parameter, dim or function twice, or a dim the function does not have, is a
# mistake to say, not to resolve silently
expect(["run", GELU, "-f", "gelu", "--target=ref", "--in", "x=" + x, "--in", "x=" + m], 2,
       "--in x given twice")
expect(["run", GELU, "-f", "gelu", "-f", "other", "--target=ref", "--in", "x=" + x], 2,
       "-f given twice")
expect(["bench", GELU, "-f", "gelu", "-f", "gelu", "--dim", "N=8"], 2, "-f given twice")
expect(["bench", GELU, "-f", "gelu", "--target=ref", "--dim", "N=8", "--dim", "N=9"], 2,
       "--dim N given twice")
expect(["bench", GELU, "-f", "gelu", "--target=ref", "--dim", "N=8", "--dim", "M=9"], 2,
       "--dim M", "no parameter of 'gelu' has a symbolic dim 'M'")
expect(["bench", SOFTMAX, "-f", "softmax", "--target=ref", "--dim", "R=2", "--dim", "C=3",
        "--dim", "N=4"], 2, "symbolic dim 'N'")
expect(["run", GELU, "-f", "gelu", "--target=ref", "--in", "x=" + x, "--dim", "N=5"], 2,
       "--dim goes with bench")
# bench's other options too, rather than ignored
for opt in (["--reps", "3"], ["--format", "json"], ["--launch=plan"], ["--no-cold-compile"]):
    expect(["run", GELU, "-f", "gelu", "--target=ref", "--in", "x=" + x] + opt, 2,
           f"{opt[0].split('=')[0]} goes with bench")
expect([GELU, "--target=ref", "--reps", "3"], 2, "--reps goes with bench")

# FUSEC_NUM_THREADS: a count from 1 to 256, else a usage error naming it (the library
# itself ignores a bad value: tests/unit/test_threadpool.c)
for bad in ["abc", "0", "-3", "99999999999", "4x", " 2", "+2", "257"]:
    expect(["run", GELU, "-f", "gelu", "--target=ref", "--in", "x=" + x], 2,
           f"FUSEC_NUM_THREADS='{bad}'", env=dict(os.environ, FUSEC_NUM_THREADS=bad))
for good in ["1", "2", "256", ""]:
    expect(["run", GELU, "-f", "gelu", "--target=ref", "--in", "x=" + x], 0,
           env=dict(os.environ, FUSEC_NUM_THREADS=good))

# --cpu: an unknown CPU is a usage error; code for a CPU this host lacks is built but never
# run (exit 3, naming what is missing); a level the host has runs and agrees with the host's
# code. (Without the CPU backend there is nothing to build: skipped.)
expect(["--cpu=banana", "--target=cpu", GELU], 2, "'banana' is not a CPU fusec knows",
       "x86-64-v3")
expect(["--target=ref", "--arch=sm_banana", GELU], 2, "not a CUDA architecture")
rc, _, se = run(["--target=cpu", "--no-cache", GELU])
if rc == 0:
    xs = os.path.join(d, "xs.npy")
    np.save(xs, np.linspace(-3, 3, 1001, dtype=np.float32))
    outs = {}
    for cpu in ["native", "x86-64-v2"]:
        outs[cpu] = os.path.join(d, f"gelu-{cpu}.npy")
        expect(["run", GELU, "-f", "gelu", "--target=cpu", f"--cpu={cpu}", "--in", "x=" + xs,
                "--out", outs[cpu]], 0)
    if all(os.path.exists(p) for p in outs.values()):
        a, b = np.load(outs["native"]), np.load(outs["x86-64-v2"])
        check(np.allclose(a, b, rtol=1e-5, atol=1e-6), f"x86-64-v2 against native: {a} {b}")
    refused = None
    for cpu in ["znver3", "sapphirerapids", "znver4", "x86-64-v4"]:
        rc, so, se = run(["run", GELU, "-f", "gelu", "--target=cpu", f"--cpu={cpu}",
                          "--in", "x=" + xs])
        if "never run here" in se:
            refused = cpu
            check(rc == 3 and "lacks" in se and "result" not in so,
                  f"--cpu={cpu} on a host without it: exit {rc}\n{so}{se}")
            break
    print(f"code for {refused} refused here" if refused else "this host runs every CPU's code")
    # the same name through the environment; the option wins over it
    expect(["run", GELU, "-f", "gelu", "--target=cpu", "--in", "x=" + xs], 2, "FUSEC_CPU 'abc'",
           env=dict(os.environ, FUSEC_CPU="abc"))
    expect(["run", GELU, "-f", "gelu", "--target=cpu", "--cpu=native", "--in", "x=" + xs], 0,
           env=dict(os.environ, FUSEC_CPU="abc"))

finish()
