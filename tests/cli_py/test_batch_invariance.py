"""tests/cli_py/test_batch_invariance.py: SPEC §5's batch invariance: a result element does not
depend on how many other rows the call has. For every function of the examples and of
tests/programs/*.fuse, and each symbolic dim D that is a batch dim there (one that every
result has and no operation reduces), the function runs
with D = 1, 7, 64 and 1000 on the first D rows of the same inputs, and the results' first
rows must be the same bits as the run over 1000 rows' (NaN as NaN: SPEC §5 leaves payloads
free). A dim that is not the leading axis is sliced where it lies: the columns of a column
reduction ([R, C] to [C]) are batch dims as well. The other dims are small and odd (C = 33: a row of more than one round of 32 lanes);
rows of 1000 go to several threads and blocks where 7 do not, so the row and column kernels'
work is cut differently while each row's order must stay the same.

FUSEC_TEST_TARGET=cuda runs it on the CUDA target (a GPU, or the emulated one), FUSEC_TEST_SHARD
takes every n-th function (tests/cli_py/fusectest.py); FUSEC_CPU_TEST_QUICK=1 takes 300 rows for
1000 and 260 for 600 (the emulated GPU's run)."""
import os
import re
import sys

sys.path.insert(0, os.path.dirname(__file__))
from fusectest import (SRC, bits_differ, check, finish, fusec_run, in_shard, later, np,  # noqa: E402
                       progress, rand, run, same_but_nan_signs, target_or_skip, tmpdir)

TARGET = target_or_skip()
OUT = tmpdir()
rng = np.random.default_rng(20261127)
COUNTS = (1, 7, 64, 1000)
OTHER = {"C": 33, "N": 37, "R": 600, "B": 600}  # any other dim: 5
if os.environ.get("FUSEC_CPU_TEST_QUICK") == "1":  # (the emulated GPU: a thread a fiber)
    COUNTS = (1, 7, 64, 300)
    OTHER = {"C": 33, "N": 37, "R": 260, "B": 260}
NP = {"bool": np.bool_, "i32": np.int32, "i64": np.int64, "f16": np.float16, "bf16": np.float32,
      "f32": np.float32, "f64": np.float64}
REDUCE = re.compile(r"= (sum|mean|prod|max|min|argmax|argmin) %(\d+) axes=\(([\d, ]*)\)")

FILES = sorted(os.path.join(SRC, "examples", f) for f in os.listdir(os.path.join(SRC, "examples"))
               if f.endswith(".fuse"))
FILES += sorted(os.path.join(SRC, "tests", "programs", f)
                for f in os.listdir(os.path.join(SRC, "tests", "programs")) if f.endswith(".fuse"))


def dims_of(text):
    return [d.strip() for d in text.split(",")] if text.strip() else []


def functions(path):
    """{name: (params [(name, dtype, dims)], results [(dtype, dims)], reduced dim names)} from
    the fused IR (gradients expanded)."""
    rc, out, err = run(["--emit=ir", "--target=ref", path])
    check(rc == 0, f"{path}: --emit=ir: exit {rc}: {err}")
    fns, cur = {}, None
    shapes = {}
    for line in out.splitlines():
        m = re.match(r"func (\w+)\((.*)\) -> (.*)$", line)
        if m:
            res = [(t, dims_of(d)) for t, d in re.findall(r"(\w+)\[([^\]]*)\]", m.group(3))]
            cur = fns[m.group(1)] = ([], res, set(), [False])
            # the declared parameters (an input node may hold another shape: [R] as [R, 1])
            declared = {int(i): (t, dims_of(d)) for i, t, d in
                        re.findall(r"%(\d+): (\w+)\[([^\]]*)\]", m.group(2))}
            shapes = {}
            continue
        if cur is None:
            continue
        m = re.match(r"\s+%(\d+) = .* : \w+\[([^\]]*)\]", line)
        if m:
            shapes[m.group(1)] = dims_of(m.group(2))
        m = re.match(r'\s+%\d+ = input (\d+) "(\w+)" : (\w+)\[(.*)\]', line)
        if m:
            t, dims = declared.get(int(m.group(1)), (m.group(3), dims_of(m.group(4))))
            cur[0].append((int(m.group(1)), m.group(2), t, dims))
        cur[3][0] |= " = rand " in line
        m = REDUCE.search(line)
        if m and m.group(2) in shapes:
            for a in dims_of(m.group(3)):
                if int(a) < len(shapes[m.group(2)]):
                    cur[2].add(shapes[m.group(2)][int(a)])
    return {fn: (sorted(p), r, red, rnd[0]) for fn, (p, r, red, rnd) in fns.items()}


def batch_dims(params, results, reduced, has_rand):
    """The dims reduced by nothing that every result has: rows (the leading axis), or columns
    (a column reduction's C). Not a later axis where the function draws random numbers: rand
    is a function of the row-major flat index, which the later axes' extents change."""
    names = {d for _, _, _, dims in params for d in dims if not d.isdigit()}
    out = []
    for d in sorted(names):
        if d in reduced or not results or any(d not in dims for _, dims in results):
            continue
        later_axis = any(d in dims[1:] for _, _, _, dims in params + results_as_params(results))
        if has_rand and later_axis:
            continue
        out.append(d)
    return out


def results_as_params(results):
    return [(0, "", t, dims) for t, dims in results]


def first(a, dims, d, n):
    """a's first n along every axis named d."""
    return a[tuple(slice(0, n) if x == d else slice(None) for x in dims)] if dims else a


def make_input(dtype, shape):
    if dtype == "bool":
        return rng.integers(0, 2, size=shape).astype(np.bool_)
    if dtype in ("i32", "i64"):
        return rng.integers(-20, 21, size=shape).astype(NP[dtype])
    return rand(shape, rng).astype(NP[dtype])


def case(path, fn, params, results, d):
    """The function over D = 1000 rows and fewer: the first rows' bits must not change."""
    tag = f"{os.path.basename(path)}:{fn} over {d}"
    cdir = os.path.join(OUT, f"{fn}_{d}")
    os.makedirs(cdir, exist_ok=True)
    full = {}
    for _, name, dtype, dims in params:
        shape = tuple(int(x) if x.isdigit() else (COUNTS[-1] if x == d else OTHER.get(x, 5))
                      for x in dims)
        full[name] = (make_input(dtype, shape), dims)
    later(run_counts, tag, path, fn, params, results, d, cdir, full)


def run_counts(tag, path, fn, params, results, d, cdir, full):
    progress(tag)
    got = {}
    for n in COUNTS[::-1]:
        files = []
        for _, name, _, _ in params:
            a, dims = full[name]
            p = os.path.join(cdir, f"{name}_{n}.npy")
            np.save(p, first(a, dims, d, n))
            files.append((name, p))
        outs = [os.path.join(cdir, f"r{i}_{n}.npy") for i in range(len(results))]
        rc, err = fusec_run(path, fn, files, outs, TARGET)
        check(rc == 0, f"{tag} = {n}: exit {rc}: {err.strip()[-300:]}")
        if rc != 0:
            return
        got[n] = [np.load(o) for o in outs]
    for n in COUNTS[:-1]:
        for i, (a, b) in enumerate(zip(got[n], got[COUNTS[-1]])):
            b = first(b, results[i][1], d, n)
            ok = a.shape == b.shape and same_but_nan_signs(a, b)
            where = ""
            if not ok and a.shape == b.shape:
                bad = np.argwhere(bits_differ(a, b))
                if bad.size:
                    at = tuple(int(x) for x in bad[0])
                    where = f": first at {at}: {a[at]!r} against {b[at]!r}"
            check(ok, f"{tag} = {n}: result {i} is not the first {n} rows of the run over "
                      f"{COUNTS[-1]}{where}")


k = 0
for path in FILES:
    for fn, (params, results, reduced, has_rand) in functions(path).items():
        for d in batch_dims(params, results, reduced, has_rand):
            if in_shard(k):
                case(path, fn, params, results, d)
            k += 1
finish()
