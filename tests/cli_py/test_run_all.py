"""tests/cli_py/test_run_all.py: `fusec run --target=all` (tools/run_all.c): the function on every
target the machine has, each run's results compared bit for bit with the first's.

- GELU with NaN, infinities and zeros among its inputs, and softmax over [37, 1001]: every
  configuration line is there (ran, the same bits, or skipped with a reason), the runs agree
  (exit 0), and the results written are `fusec run --target=cpu`'s, byte for byte.
- softmax with --fast-math, whose fused kernel multiplies by the row's reciprocal where
  --no-fuse divides: the difference is found (exit 4), with the first differing element's
  index, both values and bits, and the count.
- bf16 layer normalization, which --no-fuse computes with rounded intermediates (SPEC §1):
  fused and --no-fuse may differ, each one answer on every target (exit 0, the reason said).
- usage errors (exit 2): --target=all outside `run`, with --no-fuse, --cpu or --arch; an error
  in the input is that error (exit 1), not a difference."""
import os
import re
import sys

sys.path.insert(0, os.path.dirname(__file__))
from fusectest import SRC, check, finish, np, rand, run, target_or_skip, tmpdir  # noqa: E402

if target_or_skip() != "cpu":
    print("--target=all runs every target itself: the plain CPU run tests it")
    sys.exit(77)

d = tmpdir()
rng = np.random.default_rng(20261127)
ex = os.path.join(SRC, "examples")
CONFIGS = ["cpu", "cpu --no-fuse", "cuda", "cuda --no-fuse"]


def save(name, a):
    p = os.path.join(d, name)
    np.save(p, a)
    return p


def run_all(fuse, fn, ins, extra=()):
    out = os.path.join(d, f"{fn}_all.npy")
    args = ["run", os.path.join(ex, fuse), "-f", fn, "--target=all", "--out", out]
    for name, p in ins:
        args += ["--in", f"{name}={p}"]
    rc, so, se = run(args + list(extra))
    return rc, so, se, out


def lines_ok(tag, so):
    """Every configuration has its line, each saying what came of it."""
    for name in CONFIGS:
        m = re.search(rf"^{re.escape(name)} +(.*)$", so, re.M)
        check(m is not None, f"{tag}: no line for {name}:\n{so}")
        if m:
            what = m.group(1)
            check(re.match(r"(ran: |the same bits$|skipped: .+|differs: )", what) is not None,
                  f"{tag}: {name}: {what}")


def same_as_cpu(tag, fuse, fn, ins, out):
    plain = os.path.join(d, f"{fn}_cpu.npy")
    args = ["run", os.path.join(ex, fuse), "-f", fn, "--target=cpu", "--out", plain]
    for name, p in ins:
        args += ["--in", f"{name}={p}"]
    rc, _, se = run(args)
    check(rc == 0, f"{tag}: fusec run --target=cpu: exit {rc}: {se}")
    check(rc == 0 and open(out, "rb").read() == open(plain, "rb").read(),
          f"{tag}: --target=all wrote other results than --target=cpu")


# agreement: element-wise with special values, and a row reduction
x = rand((1001,), rng).astype(np.float32)
x[:6] = [np.nan, np.inf, -np.inf, 0.0, -0.0, 30.0]
gelu_in = [("x", save("gelu_x.npy", x))]
rc, so, se, out = run_all("gelu.fuse", "gelu", gelu_in)
check(rc == 0, f"gelu: exit {rc}\n{so}{se}")
check("one answer" in so, f"gelu: no verdict:\n{so}")
check(re.search(r"^cpu --no-fuse +the same bits$", so, re.M) is not None, f"gelu:\n{so}")
lines_ok("gelu", so)
if rc == 0:
    same_as_cpu("gelu", "gelu.fuse", "gelu", gelu_in, out)

sm_in = [("x", save("sm_x.npy", rand((37, 1001), rng).astype(np.float32)))]
rc, so, se, out = run_all("softmax.fuse", "softmax", sm_in)
check(rc == 0, f"softmax: exit {rc}\n{so}{se}")
lines_ok("softmax", so)
if rc == 0:
    same_as_cpu("softmax", "softmax.fuse", "softmax", sm_in, out)

# a difference: --fast-math's reciprocal against --no-fuse's division
rc, so, se, out = run_all("softmax.fuse", "softmax", sm_in, ["--fast-math"])
check(rc == 4, f"softmax --fast-math: exit {rc}, want 4 (the runs differ)\n{so}{se}")
m = re.search(r"^cpu --no-fuse +differs: result 0 at \[(\d+), (\d+)\]: (\S+) \(0x([0-9a-f]{8})\) "
              r"against (\S+) \(0x([0-9a-f]{8})\); (\d+) of 37037 elements differ$", so, re.M)
check(m is not None, f"softmax --fast-math: the difference is not reported as it should be:\n{so}")
if m and os.path.exists(out):
    first = np.load(out)  # the first run's (fused) results, as written
    r, c = int(m.group(1)), int(m.group(2))
    bits = first.view(np.uint32)[r, c]
    check(f"{bits:08x}" == m.group(6), f"the first run's bits at [{r}, {c}]: {bits:08x}, "
          f"reported {m.group(6)}")
    check(m.group(4) != m.group(6), "a difference reported between equal bits")
    check(0 < int(m.group(7)) < 37037, f"count {m.group(7)}")
lines_ok("softmax --fast-math", so)

# bf16 layer normalization: --no-fuse stores its intermediates rounded to bf16 (SPEC §1), so it
# may differ from the fused kernel, as one answer of its own: exit 0, with the reason said
xb = (rand((37, 1001), rng) * 8).astype(np.float32)
ln_in = [("x", save("ln_x.npy", xb)), ("w", save("ln_w.npy", rand((1001,), rng).astype(np.float32))),
         ("b", save("ln_b.npy", rand((1001,), rng).astype(np.float32)))]
rc, so, se, out = run_all("layernorm.fuse", "layernorm", ln_in)
check(rc == 0, f"bf16 layernorm: exit {rc}, want 0 (SPEC §1's allowance)\n{so}{se}")
if re.search(r"^cpu --no-fuse +differs", so, re.M):
    check("as SPEC §1 allows" in so and "one answer fused and one --no-fuse" in so,
          f"bf16 layernorm: the allowance is not said:\n{so}")
lines_ok("bf16 layernorm", so)

# usage and input errors
gelu = os.path.join(ex, "gelu.fuse")
for args, want, what in [
        ([gelu, "--target=all"], 2, "--target=all without run"),
        (["run", gelu, "-f", "gelu", "--target=all", "--no-fuse", "--in", f"x={gelu_in[0][1]}"],
         2, "--target=all --no-fuse"),
        (["run", gelu, "-f", "gelu", "--target=all", "--cpu=x86-64-v3", "--in",
          f"x={gelu_in[0][1]}"], 2, "--target=all --cpu"),
        (["run", gelu, "-f", "gelu", "--target=all", "--arch=sm_90", "--in",
          f"x={gelu_in[0][1]}"], 2, "--target=all --arch"),
        (["run", gelu, "-f", "gelu", "--target=all"], 1, "a missing input"),
        (["run", gelu, "-f", "nope", "--target=all", "--in", f"x={gelu_in[0][1]}"], 1,
         "a missing function")]:
    rc, so, se = run(args)
    check(rc == want, f"{what}: exit {rc}, want {want}\n{so}{se}")
    check("Traceback" not in se and "internal error" not in se, f"{what}: {se}")

finish()
