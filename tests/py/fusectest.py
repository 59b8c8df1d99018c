"""tests/py/fusectest.py: helpers shared by the Python tests: running fusec, numpy
references for bf16/f16 rounding, and the SPEC's tolerances (§5)."""
import atexit
import os
import shutil
import subprocess
import sys
import tempfile

try:
    import numpy as np
except ImportError:  # the tests need numpy; without it they are skipped, not failed
    print("numpy is not installed: skipping")
    sys.exit(77)

FUSEC = os.environ.get("FUSEC", "build/fusec")
SRC = os.environ.get("FUSEC_SRC", ".")

failures = 0
checks = 0


def fusec_env(env=None):
    """The environment for a fusec process: env (default ours), with FUSEC_TEST_PRELOAD
    preloaded where it is set (the emulated CUDA tests' AddressSanitizer runtime, which these
    processes need and the tests' own Python, slower under it, does not)."""
    pre = os.environ.get("FUSEC_TEST_PRELOAD")
    if not pre:
        return env
    env = dict(os.environ if env is None else env)
    env["LD_PRELOAD"] = pre
    return env


def run(args, env=None, **kw):
    """Runs fusec with args; returns (exit code, stdout, stderr)."""
    p = subprocess.run([FUSEC] + args, capture_output=True, text=True, timeout=600,
                       env=fusec_env(env), **kw)
    return p.returncode, p.stdout, p.stderr


def fusec_run(path, fn, files, outs, target, extra=(), env=None):
    """`fusec run` of fn with --in NAME=FILE for each (name, file) and --out for each path
    (removed first, so that a stale file never passes for a result); (exit code, stderr)."""
    args = ["run", path, "-f", fn, f"--target={target}", *extra]
    for name, p in files:
        args += ["--in", f"{name}={p}"]
    for p in outs:
        if os.path.exists(p):
            os.remove(p)
        args += ["--out", p]
    p = subprocess.run([FUSEC] + args, capture_output=True, text=True, timeout=600,
                       env=fusec_env(env))
    return p.returncode, p.stderr


def target_or_skip():
    """FUSEC_TEST_TARGET (default cpu); exits 77 (skipped) when this build has no such backend
    or the machine no GPU for it."""
    target = os.environ.get("FUSEC_TEST_TARGET", "cpu")
    rc, _, err = run(["run", os.path.join(SRC, "examples", "gelu.fuse"), "-f", "gelu",
                      f"--target={target}", "--in", "x=/nonexistent.npy"])
    if "not part of this build" in err or "no native target" in err:
        print(f"the {target} backend is not built: skipping")
        sys.exit(77)
    if "no CUDA driver or device" in err:
        print("no GPU here: skipping")
        sys.exit(77)
    cpu = os.environ.get("FUSEC_CPU")
    if target == "cpu" and cpu:
        # the code must be built for that CPU, and this host must be able to run it
        rc, out, err = run(["-v", "--target=cpu", "--no-cache",
                            os.path.join(SRC, "examples", "gelu.fuse")])
        if "never run here" in out + err:
            print(f"this host cannot run code built for {cpu}: skipping")
            sys.exit(77)
        if rc != 0 or f"code for {cpu} " not in out + err:
            print(f"FAIL: FUSEC_CPU={cpu}: fusec -v does not say it built for {cpu}:\n{out}{err}")
            sys.exit(1)
        print(f"CPU code built for {cpu}")
    return target


def check(cond, what):
    global failures, checks
    checks += 1
    if not cond:
        failures += 1
        print("FAIL:", what)


def finish():
    print(f"{checks - failures} passed, {failures} failed")
    sys.exit(1 if failures else 0)


def tmpdir():
    """A fresh directory, removed when the test exits: the big profiles write hundreds of
    megabytes of .npy files, and a test that leaves them behind fills the disk of a shared
    machine within a few dozen runs."""
    d = tempfile.mkdtemp(prefix="fusec-test-")
    atexit.register(shutil.rmtree, d, ignore_errors=True)
    return d


def bf16_round(a):
    """float64/float32 array -> float64 values rounded to bf16 (nearest even)."""
    f = np.asarray(a, dtype=np.float64).astype(np.float32)
    u = f.view(np.uint32).astype(np.uint64)
    nan = np.isnan(f)
    rounded = ((u + 0x7FFF + ((u >> 16) & 1)) >> 16) << 16
    out = rounded.astype(np.uint32).view(np.float32).astype(np.float64)
    out[nan] = np.nan
    return out


def round_to(a, dtype):
    """Values as the storage dtype holds them, as float64 (or the int dtype)."""
    a = np.asarray(a, dtype=np.float64)
    if dtype == "f16":
        return a.astype(np.float16).astype(np.float64)
    if dtype == "bf16":
        return bf16_round(a)
    if dtype == "f32":
        return a.astype(np.float32).astype(np.float64)
    return a


def ulp(ref, dtype):
    """One unit in the last place of the storage dtype at |ref|."""
    r = np.abs(np.asarray(ref, dtype=np.float64))
    if dtype == "f16":
        return np.spacing(r.astype(np.float16)).astype(np.float64)
    if dtype == "bf16":
        e = np.floor(np.log2(np.maximum(r, 1e-38)))
        return np.exp2(e - 7)
    return np.zeros_like(r)


def tolerance(ref, dtype, rel=1e-5, abs_=1e-6):
    """SPEC §5's element-wise allowance at ref for a result of dtype."""
    ref = np.asarray(ref, dtype=np.float64)
    if dtype == "f64":
        rel, abs_ = 1e-12, 1e-12
    return rel * np.abs(ref) + abs_ + ulp(ref, dtype)


def close(got, ref, dtype, rel=1e-5, abs_=1e-6, extra=None):
    """SPEC §5 element-wise tolerance; `extra` adds a per-element allowance (reductions)."""
    got = np.asarray(got, dtype=np.float64)
    ref = np.asarray(ref, dtype=np.float64)
    if got.shape != ref.shape:
        return False, f"shape {got.shape} != {ref.shape}"
    tol = tolerance(ref, dtype, rel, abs_)
    if extra is not None:
        tol = tol + extra
    same_nan = np.isnan(got) == np.isnan(ref)
    fin = np.isfinite(ref)
    ok_inf = np.where(np.isinf(ref), got == ref, True)
    diff = np.where(fin, np.abs(got - ref), 0.0)
    bad = ~(same_nan & ok_inf & (diff <= np.where(fin, tol, 0.0)))
    if bad.any():
        i = np.argwhere(bad)[0]
        i = tuple(i)
        return False, f"at {i}: got {got[i]!r}, want {ref[i]!r} (tol {np.broadcast_to(tol, ref.shape)[i]:.3g})"
    return True, ""


def same_but_nan_signs(a, b):
    """Bit-identical, except that a NaN may have another sign or payload: with another
    thread count, an element may fall in a loop's scalar remainder instead of its vector
    body, where an add of two NaNs may have its operands the other way round, and IEEE 754
    leaves the sign of such a NaN open. Every other bit must agree."""
    if a.shape != b.shape or a.dtype != b.dtype:
        return False
    if a.tobytes() == b.tobytes():
        return True
    if a.dtype.kind != "f":
        return False
    na, nb = np.isnan(a), np.isnan(b)
    return bool(np.array_equal(na, nb) and a[~na].tobytes() == b[~nb].tobytes())


def rand(shape, rng, lo=-4.0, hi=4.0):
    """Random non-zero values."""
    a = rng.uniform(lo, hi, size=shape)
    a[a == 0] = 0.5
    return a
