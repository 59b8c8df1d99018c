"""tests/cli_py/test_reduction_order.py: the order of a float sum or product (docs/plan.md, "The
order of a reduction") on the CPU target, bit for bit against a model of that order written
here in numpy float32 (blocks of 1024, 32 lanes each in index order, the lanes combined by
halves, the blocks by the aligned binary tree), which no backend's code shares:

- row sums over rows of 1 to 70001 elements (within a lane, a round, a block, many blocks:
  the tree over blocks with its odd ends), and over 1, 7 and 64 rows (batch invariance);
  sums, means and products over rows of 1 to 31 elements (run as columns, in units of
  registers of 1 to 32 elements) over 1001 rows;
- full sums of a contiguous array, and of a product with a broadcast weight (a walk over
  runs, whose lanes and blocks follow the flat index across the runs' ends), cut into chunks
  and threads;
- column sums, in units of columns, and cut into pieces of rows that a join combines;
- row means (the sum, then one division by the count) and row products (the same tree with
  the multiplication);
- each for the host's CPU and x86-64-v2/v3 (vectors of 4, 8 or 16 floats), and 1, 2 and 7
  threads (with FUSEC_CPU_TEST_QUICK=1, as under the sanitizers, the host with 7 only).

Inputs are random non-zero values of mixed magnitude (so that another order gives other
bits), with negative zeros among them. A mismatch names the first element that differs. Then
softmax, a division by a row's root mean square, a layernorm and a kernel too large for units in
registers, fused, bit for bit against --no-fuse at
the same CPU level (a division by a value computed once a row is a division an element, not
a multiplication by its reciprocal). Only the CPU target: the CUDA kernels do not follow the
order yet (issue 30)."""
import os
import sys

sys.path.insert(0, os.path.dirname(__file__))
from fusectest import check, finish, fusec_run, np, target_or_skip, tmpdir  # noqa: E402

target_or_skip()
OUT = tmpdir()
rng = np.random.default_rng(20261127)
SOURCE = ("""
fn rows(x: f32[R, C]) -> f32[R] { return sum(x, axis=1); }
fn full(x: f32[R, C]) -> f32[] { return sum(x); }
fn weighted(x: f32[R, C], w: f32[C]) -> f32[] { return sum(x * w); }
fn cols(x: f32[R, C]) -> f32[C] { return sum(x, axis=0); }
fn rowprod(x: f32[R, C]) -> f32[R] { return prod(x, axis=1); }
fn rowmean(x: f32[R, C]) -> f32[R] { return mean(x, axis=1); }
fn softmax(x: f32[R, C]) -> f32[R, C] { let e = exp(x - max(x, axis=1)); return e / sum(e, axis=1); }
fn scaled(x: f32[R, C]) -> f32[R, C] { return x / sqrt(mean(x * x, axis=1) + 1e-5); }
fn deep(x: f32[R, C]) -> f32[R, C] {
    let y = sin(cos(sin(cos(sin(x))))) + 2.0;
    return y / sum(y, axis=1);
}
fn normed(x: f32[R, C], w: f32[C], b: f32[C]) -> f32[R, C] {
    let d = x - mean(x, axis=1);
    return d / sqrt(mean(d * d, axis=1) + 1e-5) * w + b;
}
""")


def program(fn):
    """A file of function fn alone: a module's narrow bodies (its short rows as columns) are
    within a budget (codegen/cpu/llvm.c, LG_NARROW_MODULE_BUDGET), which one module of all of
    them would exceed; each alone has its own."""
    path = os.path.join(OUT, f"{fn}.fuse")
    if not os.path.exists(path):
        text = next(t for t in SOURCE.split("\nfn ") if t.startswith(fn + "("))
        with open(path, "w") as f:
            f.write("fn " + text.rstrip() + "\n")
    return path

BLOCK, LANES = 1024, 32
f32 = np.float32


def tree(vals, op):
    """The aligned binary tree over vals (a list of float32), by halves of powers of two."""
    n = len(vals)
    if n == 1:
        return vals[0]
    mid = 1
    while mid * 2 < n:
        mid *= 2
    return f32(op(tree(vals[:mid], op), tree(vals[mid:], op)))


def model(v, op=np.add, identity=0.0):
    """The float32 reduction of v (op: np.add or np.multiply) in the order of docs/plan.md."""
    v = np.asarray(v, dtype=f32).ravel()
    if v.size == 0:
        return f32(identity)
    blocks = []
    for b0 in range(0, v.size, BLOCK):
        blk = v[b0:b0 + BLOCK]
        pad = np.full(BLOCK, identity, dtype=f32)
        pad[:blk.size] = blk
        lanes = np.full(LANES, identity, dtype=f32)
        for r in range(BLOCK // LANES):  # each lane in index order, from the identity
            lanes = op(lanes, pad[r * LANES:(r + 1) * LANES])
        half = LANES // 2
        while half >= 1:
            lanes[:half] = op(lanes[:half], lanes[half:2 * half])
            half //= 2
        blocks.append(f32(lanes[0]))
    return tree(blocks, op)


def model_sum(v):
    return model(v)


def data(shape):
    """Random values of mixed magnitude and sign, a few negative zeros among them."""
    x = (rng.uniform(-1, 1, size=shape) * 10.0 ** rng.integers(-3, 4, size=shape)).astype(f32)
    x.flat[::97] = f32(-0.0)
    return x


def first_difference(got, want):
    if np.shape(got) != np.shape(want):
        return f"shape {np.shape(got)} against {np.shape(want)}"
    got, want = np.ravel(got), np.ravel(want)  # (flat indexes below)
    g, w = got.view(np.uint32), want.view(np.uint32)
    bad = np.flatnonzero(g != w)
    if bad.size == 0:
        return None
    i = bad[0]
    return (f"{bad.size} of {g.size} differ; first at flat index {i}: got {got[i]!r} "
            f"({g[i]:#010x}), expected {want[i]!r} ({w[i]:#010x})")


CONFIGS = [("host", 1), ("host", 2), ("host", 7), ("x86-64-v3", 2), ("x86-64-v2", 7)]
if os.environ.get("FUSEC_CPU_TEST_QUICK") == "1":  # the sanitizers' pass: one of them
    CONFIGS = [("host", 7)]


def run(fn, arrays, want, what):
    files = []
    for name, a in arrays:
        p = os.path.join(OUT, f"{name}.npy")
        np.save(p, a)
        files.append((name, p))
    for cpu, threads in CONFIGS:
        env = dict(os.environ, FUSEC_NUM_THREADS=str(threads))
        if cpu != "host":
            env["FUSEC_CPU"] = cpu
        out = os.path.join(OUT, "out.npy")
        rc, err = fusec_run(program(fn), fn, files, [out], "cpu", env=env)
        check(rc == 0, f"{what} ({cpu}, {threads} threads): exit {rc}: {err.strip()}")
        if rc != 0:
            continue
        diff = first_difference(np.load(out), want)
        check(diff is None, f"{what} ({cpu}, {threads} threads): {diff}")


# row sums: every length class, a row's bits the same whatever the rows around it
for c in (1, 7, 31, 32, 33, 64, 100, 1000, 1024, 1025, 3071, 4097, 70001):
    x = data((64, c))
    want = np.array([model_sum(r) for r in x], dtype=f32)
    run("rows", [("x", x)], want, f"sum over rows of {c}")
    for r in (1, 7):
        run("rows", [("x", x[:r].copy())], want[:r], f"sum over {r} rows of {c} (batch invariance)")

# rows of at most 31 elements run as columns, 128 rows a unit (codegen/cpu/llvm.c, gen_narrow;
# at most 12 or 15 without 64-byte vectors), in units of registers of 1, 2, 3, 4, 6, 8, 12,
# 16, 24 or 32 elements (narrow_regs; the elements past the row's end pad the unit): the same
# order, over several units and a partial last one, cut among threads anywhere
for c in (1, 2, 3, 5, 8, 11, 12, 16, 17, 23, 31):
    x = data((1001, c))
    want = np.array([model_sum(r) for r in x], dtype=f32)
    run("rows", [("x", x)], want, f"sum over 1001 rows of {c}")
    run("rowmean", [("x", x)], want / f32(c), f"means over 1001 rows of {c}")
    for r in (1, 130):
        run("rows", [("x", x[:r].copy())], want[:r], f"sum over {r} rows of {c} (batch invariance)")
    y = rng.uniform(0.97, 1.03, size=(300, c)).astype(f32)
    want = np.array([model(r, np.multiply, 1.0) for r in y], dtype=f32)
    run("rowprod", [("x", y)], want, f"products over 300 rows of {c}")

# full sums: within a chunk, across chunks (65536 elements each) and threads, and over runs
for shape in ((1, 1), (3, 333), (7, 9999), (5, 70001)):
    x = data(shape)
    run("full", [("x", x)], model_sum(x), f"full sum over {shape}")
for shape in ((3, 333), (129, 1023)):
    x, w = data(shape), data(shape[1:])
    run("weighted", [("x", x), ("w", w)], model_sum(x * w), f"sum(x * w) over {shape}")

# column sums: the same order down each column, in units of columns, and cut into pieces
# of rows (few columns, many rows) that a join combines
for shape in ((1, 5), (33, 7), (1025, 3), (5000, 300), (3071, 129), (70001, 7), (300007, 2)):
    x = data(shape)
    want = np.array([model_sum(x[:, c]) for c in range(shape[1])], dtype=f32)
    run("cols", [("x", x)], want, f"column sums over {shape}")

# means: the sum in the order, then one division by the count (in float32)
for c in (7, 1000, 3071):
    x = data((7, c))
    want = np.array([model_sum(r) / f32(c) for r in x], dtype=f32)
    run("rowmean", [("x", x)], want, f"means over rows of {c}")

# products: the same tree with the multiplication (values near 1, so nothing overflows)
for c in (5, 64, 1000, 5000):
    x = rng.uniform(0.97, 1.03, size=(7, c)).astype(f32)
    want = np.array([model(r, np.multiply, 1.0) for r in x], dtype=f32)
    run("rowprod", [("x", x)], want, f"products over rows of {c}")

# a division by a value computed once a row (softmax's sum) is the program's division, element
# by element, in the fused kernel as in --no-fuse's (SPEC §5: fused and --no-fuse give the same
# bits); the exponential's bits depend on the CPU level (FMA or not), so each level against
# --no-fuse at the same level
def run_against_nofuse(fn, x, what, more=()):
    p = os.path.join(OUT, "x.npy")
    np.save(p, x)
    ins = [("x", p)]
    for name, a in more:
        ins.append((name, os.path.join(OUT, name + ".npy")))
        np.save(ins[-1][1], a)
    for level in dict.fromkeys(cpu for cpu, _ in CONFIGS):
        env = dict(os.environ, FUSEC_NUM_THREADS="1")
        if level != "host":
            env["FUSEC_CPU"] = level
        ref = os.path.join(OUT, "nofuse.npy")
        rc, err = fusec_run(program(fn), fn, ins, [ref], "cpu", ["--no-fuse"], env=env)
        check(rc == 0, f"{what} --no-fuse ({level}): exit {rc}: {err.strip()}")
        if rc != 0:
            continue
        want = np.load(ref)
        for cpu, threads in CONFIGS:
            if cpu != level:
                continue
            env["FUSEC_NUM_THREADS"] = str(threads)
            out = os.path.join(OUT, "out.npy")
            rc, err = fusec_run(program(fn), fn, ins, [out], "cpu", env=env)
            check(rc == 0, f"{what} ({cpu}, {threads} threads): exit {rc}: {err.strip()}")
            if rc == 0:
                diff = first_difference(np.load(out), want)
                check(diff is None, f"{what} ({cpu}, {threads} threads) against --no-fuse: {diff}")


for c in (3, 7, 13, 24, 64, 1000, 3071):
    x = rng.uniform(-4, 4, size=(37 if c > 31 else 300, c)).astype(f32)
    run_against_nofuse("softmax", x, f"softmax over rows of {c}")
    run_against_nofuse("scaled", x, f"x / sqrt(mean(x * x)) over rows of {c}")
# a row kernel too large for narrow units in registers keeps its sweeps in loops
# (codegen/cpu/llvm.c, narrow_units): the same bits
for c in (6, 29):
    x = rng.uniform(-4, 4, size=(300, c)).astype(f32)
    run_against_nofuse("deep", x, f"deep / sum(deep) over rows of {c}")
# a layernorm's weights along the row (loaded in memory, not copied: an element past the
# row's end in a unit of registers reads the row's last one)
for c in (1, 5, 17, 31, 40):
    x = rng.uniform(-4, 4, size=(300, c)).astype(f32)
    w, b = data((c,)), data((c,))
    run_against_nofuse("normed", x, f"layernorm over rows of {c}", [("w", w), ("b", b)])

finish()
