"""tests/cli_py/test_run_ref.py: `fusec run --target=ref` on every example against numpy, at odd
sizes, on fresh random non-zero inputs, within the SPEC's tolerances."""
import os
import sys

sys.path.insert(0, os.path.dirname(__file__))
from fusectest import (check, close, finish, np, rand, round_to, run, tmpdir,  # noqa: E402
                       SRC)

rng = np.random.default_rng()
out = tmpdir()
EX = os.path.join(SRC, "examples")


def fusec_run(fuse, fn, inputs, nout, extra=()):
    """Writes inputs (name -> array) to .npy, runs fusec, returns the results as arrays."""
    args = ["run", os.path.join(EX, fuse), "-f", fn, "--target=ref", *extra]
    for name, a in inputs.items():
        p = os.path.join(out, f"{fn}_{name}.npy")
        np.save(p, a)
        args += ["--in", f"{name}={p}"]
    outs = [os.path.join(out, f"{fn}_out{i}.npy") for i in range(nout)]
    for p in outs:
        if os.path.exists(p):
            os.remove(p)
        args += ["--out", p]
    rc, so, se = run(args)
    check(rc == 0, f"{fuse}:{fn} exit {rc}: {se}")
    if rc != 0:
        return None
    return [np.load(p) for p in outs]


def gelu_ref(x):
    k = np.sqrt(2.0 / np.pi)
    return 0.5 * x * (1.0 + np.tanh(k * (x + 0.044715 * x ** 3)))


def softmax_ref(x):
    e = np.exp(x - x.max(axis=1, keepdims=True))
    return e / e.sum(axis=1, keepdims=True)


def layernorm_ref(x, w, b):
    mu = x.mean(axis=1, keepdims=True)
    d = x - mu
    return d / np.sqrt((d * d).mean(axis=1, keepdims=True) + 1e-5) * w + b


for n in (1, 7, 1000, 4099):
    x = rand(n, rng).astype(np.float32)
    res = fusec_run("gelu.fuse", "gelu", {"x": x}, 1)
    if res:
        check(res[0].dtype == np.float32, "gelu writes f32")
        ok, why = close(res[0], gelu_ref(x.astype(np.float64)), "f32")
        check(ok, f"gelu n={n}: {why}")

for b, c in ((1, 1), (3, 5), (7, 129)):
    x = rand((b, c), rng).astype(np.float16)
    bias = rand(c, rng).astype(np.float16)
    res = fusec_run("bias_relu.fuse", "bias_relu", {"x": x, "b": bias}, 1)
    if res:
        check(res[0].dtype == np.float16, "bias_relu writes f16")
        ref = round_to(np.maximum(x.astype(np.float64) + bias.astype(np.float64), 0), "f16")
        ok, why = close(res[0], ref, "f16")
        check(ok, f"bias_relu [{b},{c}]: {why}")

for r, c in ((1, 1), (5, 3), (3, 1000), (17, 33)):
    x = rand((r, c), rng).astype(np.float32)
    res = fusec_run("softmax.fuse", "softmax", {"x": x}, 1)
    if res:
        ref = softmax_ref(x.astype(np.float64))
        # the sum's allowance carried through the division: 1e-5 relative
        ok, why = close(res[0], ref, "f32", rel=2e-5)
        check(ok, f"softmax [{r},{c}]: {why}")
        check(np.allclose(res[0].sum(axis=1), 1.0, atol=1e-5), "softmax rows sum to 1")

for r, c in ((1, 2), (4, 7), (9, 300)):
    x = rand((r, c), rng).astype(np.float32)
    w = rand(c, rng).astype(np.float32)
    bias = rand(c, rng).astype(np.float32)
    res = fusec_run("layernorm.fuse", "layernorm", {"x": x, "w": w, "b": bias}, 1)
    if res:
        xr, wr, br = (round_to(v, "bf16") for v in (x, w, bias))
        ref = round_to(layernorm_ref(xr, wr, br), "bf16")
        check(res[0].dtype == np.float32, "bf16 results are written as f32")
        ok, why = close(res[0], ref, "bf16", rel=1e-4)
        check(ok, f"layernorm [{r},{c}]: {why}")

for b, c in ((1, 1), (3, 31)):
    x = rand((b, c), rng).astype(np.float32)
    bias = rand(c, rng).astype(np.float32)
    res = fusec_run("bias_gelu_stats.fuse", "bias_gelu_stats", {"x": x, "b": bias}, 2)
    if res:
        y = gelu_ref(x.astype(np.float64) + bias.astype(np.float64))
        ok, why = close(res[0], y, "f32")
        check(ok, f"bias_gelu_stats y: {why}")
        check(res[1].shape == (b,), f"the [B, 1] mean is written as [B]: {res[1].shape}")
        ok, why = close(res[1], y.mean(axis=1), "f32", extra=1e-5 * np.abs(y).mean(axis=1))
        check(ok, f"bias_gelu_stats mean: {why}")
    res = fusec_run("bias_gelu_stats.fuse", "bias_gelu", {"x": x, "b": bias}, 1)
    if res:
        ok, why = close(res[0], gelu_ref(x.astype(np.float64) + bias.astype(np.float64)), "f32")
        check(ok, f"bias_gelu: {why}")

# inputs of another numeric dtype are converted to the parameter's
x = rng.integers(-5, 5, size=11).astype(np.int64)
res = fusec_run("gelu.fuse", "gelu", {"x": x}, 1)
if res:
    ok, why = close(res[0], gelu_ref(x.astype(np.float64)), "f32")
    check(ok, f"gelu of an int64 input: {why}")

finish()
