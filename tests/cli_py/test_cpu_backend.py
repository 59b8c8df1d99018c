"""tests/cli_py/test_cpu_backend.py: `fusec run --target=cpu` against `--target=ref` (the reference
interpreter) on the same .npy inputs: every function of every example and of
tests/programs/*.fuse, fused and --no-fuse, at odd sizes (1, 7, 1000003 elements, rows of 1
and of 100003 and 300007, long columns), every dtype, random non-zero inputs plus NaN, infinities, zeros
and integer edge cases (division by zero, INT_MIN / -1), within the SPEC's tolerances (§5).
Also: repeated runs give bit-identical files, and FUSEC_NUM_THREADS does not change results.

Tolerances: element-wise results as fusectest.close (SPEC §5). Functions with a reduction get
the reduction's allowance: 1e-5 times the reference result on the absolute values of the
float inputs (exactly 1e-5 * sum(|x|) for a sum, carried through epilogues), plus 2e-6 of the
largest result (a difference such as x - mean cancels), and products (n - 1) * 2^-24
relative. Under --no-fuse, f16/bf16 intermediates are rounded when stored
(SPEC §1) while the reference does not round them, so those results get a looser bound.
Integer and bool results must be equal.

Set FUSEC_CPU_TEST_QUICK=1 to run the small sizes only, FUSEC_CPU_TEST_FUSED_ONLY=1 to skip
--no-fuse. FUSEC_TEST_TARGET=cuda runs the same
cases on the GPU (tests/gpu: skipped without one), results poisoned on the device first.
FUSEC_TEST_FILES=a.fuse,b.fuse runs those files only (by name); FUSEC_TEST_JOBS=N runs N
cases at once, FUSEC_TEST_SHARD=i/n every n-th function from the i-th (ctest splits the test
so; tests/cli_py/fusectest.py)."""
import os
import re
import shutil
import sys

sys.path.insert(0, os.path.dirname(__file__))
from fusectest import (SRC, check, close, finish, fusec_run, in_shard, later, np,  # noqa: E402
                       progress, rand, run, same_but_nan_signs, target_or_skip, tmpdir)

TARGET = target_or_skip()

rng = np.random.default_rng(12345)
OUT = tmpdir()
QUICK = os.environ.get("FUSEC_CPU_TEST_QUICK") == "1"
# the fused kernels only (the runs for another CPU level: --no-fuse's kernels are the same
# element-wise loops the fused ones hold, and the host's run builds them)
FUSED_ONLY = os.environ.get("FUSEC_CPU_TEST_FUSED_ONLY") == "1"

FILES = [os.path.join(SRC, "examples", f) for f in sorted(os.listdir(os.path.join(SRC, "examples")))
         if f.endswith(".fuse")]
FILES += [os.path.join(SRC, "tests", "programs", f)
          for f in sorted(os.listdir(os.path.join(SRC, "tests", "programs"))) if f.endswith(".fuse")]
if os.environ.get("FUSEC_TEST_FILES"):
    ONLY = set(os.environ["FUSEC_TEST_FILES"].split(","))
    FILES = [f for f in FILES if os.path.basename(f) in ONLY]

NP = {"bool": np.bool_, "i32": np.int32, "i64": np.int64, "f16": np.float16, "bf16": np.float32,
      "f32": np.float32, "f64": np.float64}

# Sizes of the symbolic dims, by name (any other name gets 3).
PROFILES = {
    "ones": dict(N=1, M=1, B=1, C=1, R=1, A=1, D=1),
    "odd": dict(N=7, M=5, B=3, C=7, R=5, A=2, D=3),
    "mid": dict(N=4099, M=1031, B=37, C=1001, R=37, A=3, D=130),
    "rows": dict(N=1000003, M=17, B=3, C=100003, R=3, A=2, D=5),
    "cols": dict(N=3, M=1000, B=100003, C=7, R=100003, A=7, D=9),
}
BIG = {"rows", "cols"}
# rows whose cached per-element values (1.2 MB of f32 a row) are far beyond a core's caches:
# the row cache lies in memory, one for each part (fewer parts than threads where rows are few)
PROFILES["long_rows"] = dict(N=3, M=3, B=3, C=300007, R=3, A=2, D=3)
# columns few and long enough to be cut into pieces (the plan's split), the last one shorter
PROFILES["tall"] = dict(N=3, M=1031, B=1031, C=5, R=1031, A=3, D=3)
LONG_ROWS = {"softmax.fuse", "layernorm.fuse"}
# rows that take a whole CUDA block and fit its cache: on CUDA the row lies in shared memory
# (8193 to 16384 elements of whole 16-byte vectors: of 8 for bf16), even in the quick runs
PROFILES["block_rows"] = dict(N=3, M=3, B=3, C=12008, R=3, A=2, D=3)
# inputs a function means to have: an optimizer's hyper-parameters and second moments (random
# ones make 1 - beta^step cancel, and the reference then differs from f32 by its own rounding)
FIXED_INPUTS = {("adamw", "lr"): 1e-3, ("adamw", "beta1"): 0.9, ("adamw", "beta2"): 0.999,
                ("adamw", "eps"): 1e-8, ("adamw", "weight_decay"): 0.01, ("adamw", "step"): 7.0}
NONNEGATIVE = {("adamw", "v")}
# functions of tests/programs/cpu_dtypes.fuse made for extreme values
EDGE_FUNCS = {"nans", "casts", "casts64", "float_rem", "int32_ops", "int64_ops", "int_minmax"}
np.seterr(all="ignore")


_IR = {}


def _ir(path):
    """The fused IR of a file (cached)."""
    if path not in _IR:
        rc, out, _ = run(["--emit=ir", "--target=ref", path])
        _IR[path] = out if rc == 0 else ""
    return _IR[path]


def signature(path, fn):
    """[(name, dtype, dims)] of fn's parameters, from --emit=ir, and whether it reduces."""
    out = _ir(path)
    if not out:
        return None, ""
    params, red, cur = [], "", None
    for line in out.splitlines():
        m = re.match(r"func (\w+)\(", line)
        if m:
            cur = m.group(1)
            continue
        if cur != fn:
            continue
        m = re.match(r'\s+%\d+ = input (\d+) "(\w+)" : (\w+)\[(.*)\]', line)
        if m:
            dims = [d.strip() for d in m.group(4).split(",")] if m.group(4) else []
            params.append((int(m.group(1)), m.group(2), m.group(3), dims))
        m = re.search(r"= (sum|mean|prod|max|min) ", line)
        if m:
            red += m.group(1) + " "
    params.sort()
    return [(n, t, d) for _, n, t, d in params], red


def functions(path):
    """The functions of the file but gradients (`fn d = grad(f)`): a backward computed in f32
    cancels where an f64 reference does not (layernorm's dx, a second derivative), beyond
    SPEC §5's element-wise bounds; tests/cli_py/test_grad.py holds them to PyTorch's own f32
    error instead."""
    with open(path) as f:
        grads = set(re.findall(r"^fn\s+(\w+)\s*=\s*grad\b", f.read(), re.M))
    return [fn for fn in re.findall(r"^func (\w+)\(", _ir(path), re.M) if fn not in grads]


def make_input(dtype, shape, fn, special):
    n = int(np.prod(shape)) if shape else 1
    if dtype == "bool":
        return rng.integers(0, 2, size=shape).astype(np.bool_)
    if dtype in ("i32", "i64"):
        a = rng.integers(-20, 21, size=shape).astype(NP[dtype])
        flat = a.reshape(-1)
        if special and n >= 7:
            # division by zero and by -1, INT_MIN and INT_MAX
            lo, hi = np.iinfo(NP[dtype]).min, np.iinfo(NP[dtype]).max
            flat[:7] = [0, -1, lo, hi, lo, -1, 0]
        return a
    a = rand(shape, rng)
    if fn == "nans":
        a = np.round(a * 4) / 4  # halves, for round-half-to-even
        a[a == 0] = 0.25
    if special and n >= 8:
        flat = a.reshape(-1)
        # huge values only where no f32 intermediate can overflow or lose the argument (the
        # reference computes intermediates in float64)
        big = 1e30 if fn in EDGE_FUNCS else 3.75
        flat[:8] = [np.nan, np.inf, -np.inf, 0.0, -0.0, big, -1e-30, 2.5]
    return a.astype(NP[dtype]) if dtype != "bf16" else a.astype(np.float32)


# every other case streams its results (non-temporal stores), whatever their size
STREAM_ALL = dict(os.environ, FUSEC_CPU_STREAM_MIN_BYTES="0")
case_number = 0


def compare(tag, got, ref, ref_abs, dtype, loose, prod_n):
    if got.shape != ref.shape:
        check(False, f"{tag}: shape {got.shape} != {ref.shape}")
        return
    if dtype in ("bool", "i32", "i64"):
        bad = np.argwhere(got != ref)
        check(bad.size == 0, f"{tag}: at {tuple(bad[0]) if bad.size else ''}: "
              f"got {got[tuple(bad[0])] if bad.size else ''}, want {ref[tuple(bad[0])] if bad.size else ''}")
        return
    ref64 = ref.astype(np.float64)
    extra = None
    if ref_abs is not None:
        ra = np.abs(ref_abs.astype(np.float64))
        extra = np.where(np.isfinite(ra), 1e-5 * ra, 0.0)
        # a reduction's result taken from the values it reduces (layernorm's x - mean over a
        # row of 7) cancels: the f32 rounding of the difference is the row's, not the small
        # result's, and the absolute values above cancel as well. 2e-6 of the largest result
        # (about 30 units of f32 rounding) allows it; a wrong value is wrong at the large ones
        fin = ref64[np.isfinite(ref64)]
        extra = extra + 2e-6 * (np.max(np.abs(fin)) if fin.size else 0.0)
    if prod_n:
        e2 = np.where(np.isfinite(ref64), np.abs(ref64) * (prod_n - 1) * 2.0 ** -24, 0.0)
        extra = e2 if extra is None else extra + e2
    if loose:
        big = np.max(np.abs(ref64[np.isfinite(ref64)]), initial=0.0)
        e3 = np.where(np.isfinite(ref64), 0.05 * np.abs(ref64) + 0.02 * big + 0.05, 0.0)
        extra = e3 if extra is None else extra + e3
    ok, why = close(got, ref64, dtype, extra=extra)
    check(ok, f"{tag}: {why}")


def run_case(path, fn, profile, nofuse_too=True, special=False, repeat=False):
    """Draws the case's inputs here, in order from the one random stream, then hands the
    rest to later(): each case in its own directory, removed after it, so that the disk
    holds a few cases at a time."""
    global case_number
    case_number += 1
    case_dir = os.path.join(OUT, f"{case_number}_{fn}_{profile}")
    os.makedirs(case_dir, exist_ok=True)
    inputs = make_inputs(case_dir, path, fn, profile, special)
    env = STREAM_ALL if case_number % 2 else None
    if inputs is None:
        shutil.rmtree(case_dir, ignore_errors=True)
        return
    later(run_case_in, case_dir, path, fn, profile, inputs, env, nofuse_too, repeat)


def make_inputs(case_dir, path, fn, profile, special):
    """The case's inputs as .npy files (and their absolute values for the allowance of a
    reduction): (signature, reductions, files, files of absolute values, any float)."""
    sig, red = signature(path, fn)
    if sig is None:
        check(False, f"{path}:{fn}: --emit=ir failed")
        return None
    sizes = PROFILES[profile]
    base = os.path.join(case_dir, "t")
    files, absfiles, has_float = [], [], False
    for name, dtype, dims in sig:
        shape = tuple(int(d) if d.isdigit() else sizes.get(d, 3) for d in dims)
        a = make_input(dtype, shape, fn, special)
        if (fn, name) in FIXED_INPUTS:
            a = np.full(shape, FIXED_INPUTS[(fn, name)], dtype=a.dtype)
        elif (fn, name) in NONNEGATIVE:
            a = np.abs(a)
        p = f"{base}_in_{name}.npy"
        np.save(p, a)
        files.append((name, p))
        is_float = dtype in ("f16", "bf16", "f32", "f64")
        has_float = has_float or is_float
        if is_float and red:  # (the absolute values: a reduction's allowance only)
            p2 = f"{base}_abs_{name}.npy"
            np.save(p2, np.abs(a))
            absfiles.append((name, p2))
        else:
            absfiles.append((name, p))
    return sig, red, files, absfiles, has_float


def run_case_in(case_dir, path, fn, profile, inputs, env, nofuse_too, repeat):
    try:
        progress(f"{os.path.basename(path)}:{fn}/{profile}")
        run_case_files(case_dir, path, fn, profile, inputs, env, nofuse_too, repeat)
    finally:
        shutil.rmtree(case_dir, ignore_errors=True)


def run_case_files(case_dir, path, fn, profile, inputs, env, nofuse_too, repeat):
    sig, red, files, absfiles, has_float = inputs
    sizes = PROFILES[profile]
    base = os.path.join(case_dir, "t")
    # the results' dtypes, from the function's header line
    header = re.search(rf"^func {fn}\(.*\) -> (.*)$", _ir(path), re.M).group(1)
    rdt = re.findall(r"(bool|i32|i64|f16|bf16|f32|f64)\[", header)
    nres = len(rdt)
    refs = [f"{base}_ref{i}.npy" for i in range(nres)]
    rc, err = fusec_run(path, fn, files, refs, "ref")
    if rc != 0:
        # the reference refuses (max of an empty axis): the cpu target must refuse as well
        rc2, err2 = fusec_run(path, fn, files, [f"{base}_cpu{i}.npy" for i in range(nres)], TARGET)
        check(rc2 == rc, f"{fn}/{profile}: ref exit {rc} ({err.strip()}), cpu exit {rc2} ({err2.strip()})")
        return
    ref = [np.load(p) for p in refs]
    ref_abs = [None] * nres
    if red and has_float:
        ra = [f"{base}_refabs{i}.npy" for i in range(nres)]
        if fusec_run(path, fn, absfiles, ra, "ref")[0] == 0:
            ref_abs = [np.load(p) for p in ra]
    prod_n = 0
    if "prod" in red and sig:
        prod_n = max(int(np.prod([sizes.get(d, 3) for d in dims])) for _, _, dims in sig)
    nofuse_too = nofuse_too and not FUSED_ONLY
    modes = [("fused", ())] + ([("nofuse", ("--no-fuse",))] if nofuse_too else [])
    for mode, extra in modes:
        outs = [f"{base}_{mode}{i}.npy" for i in range(nres)]
        rc, err = fusec_run(path, fn, files, outs, TARGET, extra, env=env)
        check(rc == 0, f"{fn}/{profile}/{mode}: exit {rc}: {err.strip()[-400:]}")
        if rc != 0:
            continue
        for i in range(nres):
            got = np.load(outs[i])
            loose = mode == "nofuse" and any(t in ("f16", "bf16") for _, t, _ in sig)
            compare(f"{os.path.basename(path)}:{fn}/{profile}/{mode} result {i}", got, ref[i],
                    ref_abs[i], rdt[i], loose or (rdt[i] in ("f16", "bf16") and mode == "nofuse"),
                    prod_n)
        if repeat and mode == "fused":
            again = [f"{base}_again{i}.npy" for i in range(nres)]
            rc, err = fusec_run(path, fn, files, again, TARGET, env=env)
            env1 = dict(env or os.environ, FUSEC_NUM_THREADS="1")
            single = [f"{base}_one{i}.npy" for i in range(nres)]
            rc1, _ = fusec_run(path, fn, files, single, TARGET, env=env1)
            for i in range(nres):
                same = rc == 0 and open(outs[i], "rb").read() == open(again[i], "rb").read()
                check(same, f"{fn}/{profile}: a second run is not bit-identical (result {i})")
                same1 = rc1 == 0 and same_but_nan_signs(np.load(outs[i]), np.load(single[i]))
                check(same1, f"{fn}/{profile}: one thread gives other bits (result {i})")



# (FUSEC_TEST_SHARD: each shard takes every n-th function of the list, and its tall case)
ALL = [(path, fn) for path in FILES for fn in functions(path)]
MINE = [pf for k, pf in enumerate(ALL) if in_shard(k)]

for k, (path, fn) in enumerate(MINE):
    example = os.path.dirname(path).endswith("examples")
    # the big sizes (threads, blocks, streaming stores) for the examples, every function with a
    # reduction and every fourth element-wise one: an element-wise kernel's split over threads
    # is the same code whatever it computes
    big_too = not QUICK and (example or signature(path, fn)[1] or k % 4 == 0)
    for profile in ("ones", "odd", "mid") + (("rows", "cols") if big_too else ()):
        # the big sizes unfused for the examples only, to keep the test near 2 minutes; the
        # runs again (and on one thread) for the examples and every third function: the
        # reductions' order is checked bit for bit at every thread count by
        # test_reduction_order.py, so these look for what else could vary
        big = profile in BIG
        run_case(path, fn, profile, nofuse_too=not big or example,
                 special=profile == "mid", repeat=profile == "rows" and (example or k % 3 == 0))
    if example and not QUICK and os.path.basename(path) in LONG_ROWS:
        run_case(path, fn, "long_rows", nofuse_too=False, repeat=True)

# tall columns, after all the rest: their inputs come last from the one random stream, so the
# other cases keep theirs
for k, (path, fn) in enumerate(MINE):
    example = os.path.dirname(path).endswith("examples")
    run_case(path, fn, "tall", repeat=example or k % 3 == 0)
    if example and os.path.basename(path) in LONG_ROWS:
        run_case(path, fn, "block_rows", nofuse_too=False)

finish()
