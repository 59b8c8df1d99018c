"""tests/py/test_cli_errors.py: the command line's answers to bad input and bad usage: a
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
fortran = os.path.join(d, "fortran.npy")
np.save(fortran, np.asfortranarray(np.ones((2, 3), dtype=np.float32)))

# help, version, usage
expect(["--help"], 0, "usage: fusec", stream="stdout")
expect(["--version"], 0, "fusec 0.1.0", stream="stdout")
expect([], 2, "no input file")
expect(["--bogus", GELU], 2, "unknown option '--bogus'")
expect(["--target=gpu", GELU], 2, "unknown target 'gpu'")
expect(["--emit=asm", GELU], 2, "unknown --emit kind 'asm'")
expect(["--target"], 2, "--target needs a value")
expect(["run", GELU], 2, "run needs -f")
expect(["run", GELU, "-f"], 2, "-f needs a function name")
expect(["run", GELU, "-f", "gelu", "--in", "x"], 2, "--in needs NAME=FILE.npy")

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
expect(["run", SOFTMAX, "-f", "softmax", "--target=ref", "--in", "x=" + fortran], 1, "Fortran")
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

finish()
