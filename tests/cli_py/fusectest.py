"""tests/cli_py/fusectest.py: helpers shared by the Python tests: running fusec, numpy
references for bf16/f16 rounding, and the SPEC's tolerances (§5).

Two knobs for the tests that run many fusec processes, which the one-call GPU check
(scripts/gpu-check.sh) sets: FUSEC_TEST_JOBS=N runs the cases handed to later() on N threads
(each mostly waits for its fusec processes; on a GPU a process's start is mostly the driver's,
which N processes pay side by side), and FUSEC_TEST_VERBOSE=1 prints a line as each case
starts, so that the log of a run cut off by a time limit says how far it got."""
import atexit
import concurrent.futures
import os
import shutil
import subprocess
import sys
import tempfile
import threading

try:
    import numpy as np
except ImportError:  # the tests need numpy; without it they are skipped, not failed
    print("numpy is not installed: skipping")
    sys.exit(77)

FUSEC = os.environ.get("FUSEC", "build/fusec")
SRC = os.environ.get("FUSEC_SRC", ".")

failures = 0
checks = 0
JOBS = max(1, int(os.environ.get("FUSEC_TEST_JOBS", "1") or 1))
VERBOSE = os.environ.get("FUSEC_TEST_VERBOSE") == "1"
_lock = threading.Lock()  # the counts and the output, shared by later()'s threads
_pool = None
_pending = []


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


def shard():
    """(i, n) from FUSEC_TEST_SHARD="i/n": ctest runs a long test as n tests, the i-th taking
    every n-th case from the i-th (so that none runs past a minute alone, under the sanitizers
    too); (0, 1) when unset."""
    v = os.environ.get("FUSEC_TEST_SHARD", "")
    if not v:
        return 0, 1
    i, n = (int(x) for x in v.split("/"))
    if not 0 <= i < n:
        raise SystemExit(f"FUSEC_TEST_SHARD={v}: want i/n with 0 <= i < n")
    return i, n


def in_shard(k):
    """Whether case number k belongs to this run's shard."""
    i, n = shard()
    return k % n == i


def check(cond, what):
    global failures, checks
    with _lock:
        checks += 1
        if not cond:
            failures += 1
            print("FAIL:", what, flush=True)


def progress(what):
    """With FUSEC_TEST_VERBOSE=1, a line saying what starts (a case, a program)."""
    if VERBOSE:
        with _lock:
            print(f"[{checks} checks] {what}", flush=True)


def later(fn, *args):
    """fn(*args) now, or with FUSEC_TEST_JOBS > 1 on a worker thread; finish() waits for all
    of them, and an exception in one fails the test there. fn must use files of its own and
    draw nothing from a random generator that the caller draws from after it (its values
    would then depend on the threads' order): draw first, then hand the work over. At most
    twice JOBS cases wait, so that inputs written ahead do not pile up."""
    global _pool
    if JOBS == 1:
        fn(*args)
        return
    if _pool is None:
        _pool = concurrent.futures.ThreadPoolExecutor(JOBS)
    while sum(not f.done() for f in _pending) >= 2 * JOBS:
        concurrent.futures.wait(_pending, return_when=concurrent.futures.FIRST_COMPLETED)
    _pending.append(_pool.submit(fn, *args))
    for f in [f for f in _pending if f.done()]:
        _pending.remove(f)
        f.result()  # raises the worker's exception here


def wait_all():
    """Waits for every case handed to later()."""
    while _pending:
        _pending.pop(0).result()


def finish():
    wait_all()
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


def bits_differ(a, b):
    """Per element of two arrays of one shape and dtype: whether their bits differ, a NaN
    against a NaN never (SPEC §5: payloads and signs are free)."""
    if a.dtype.kind != "f":
        return a != b
    u = {2: np.uint16, 4: np.uint32, 8: np.uint64}[a.dtype.itemsize]
    return (a.view(u) != b.view(u)) & ~(np.isnan(a) & np.isnan(b))


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
