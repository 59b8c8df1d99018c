"""tests/cli_py/test_rand.py: rand(seed, x) bit for bit as SPEC §1 defines it, on the reference
interpreter and on FUSEC_TEST_TARGET (default cpu; cuda: the GPU, or the emulated one in
tests/emu), fused and --no-fuse.

The expected bits come from an implementation of Philox4x32-10 written here in numpy from the
SPEC's text alone (not from fusec's code), first held to Random123's published known-answer
vectors. Cases: a dropout, two draws over one shape (streams 0 and 1), a draw over a
broadcast [C] operand, a helper called twice (its draw counted at each call) and mapped over
a batch axis, rank 3 with odd sizes, seeds with their high word set and negative, a literal
seed, a scalar draw. (Indexes past 2^32, which no test array reaches, are checked in
tests/unit/test_philox.c against words this file's implementation gives.) Each seed on each
target, fused or not, and the literal seed on each target is a case of its own, handed to
fusectest's later(): FUSEC_TEST_JOBS=N runs N at once."""
import os
import sys

sys.path.insert(0, os.path.dirname(__file__))
from fusectest import (check, finish, fusec_run, later, np, progress,  # noqa: E402
                       target_or_skip, tmpdir)

TARGET = target_or_skip()
OUT = tmpdir()
M0, M1, W0, W1 = 0xD2511F53, 0xCD9E8D57, 0x9E3779B9, 0xBB67AE85
MASK = 0xFFFFFFFF


def philox(c, k):
    """Philox4x32-10 of counters c (4 uint64 arrays holding 32-bit words) and key k (2)."""
    c0, c1, c2, c3 = (np.asarray(x, dtype=np.uint64) for x in c)
    k0, k1 = (np.uint64(x) for x in k)
    for r in range(10):
        if r:
            k0 = (k0 + np.uint64(W0)) & np.uint64(MASK)
            k1 = (k1 + np.uint64(W1)) & np.uint64(MASK)
        p0 = np.uint64(M0) * c0
        p1 = np.uint64(M1) * c2
        c0, c1, c2, c3 = ((p1 >> np.uint64(32)) ^ c1 ^ k0, p1 & np.uint64(MASK),
                          (p0 >> np.uint64(32)) ^ c3 ^ k1, p0 & np.uint64(MASK))
    return c0, c1, c2, c3


# Random123's kat_vectors, philox4x32 10 rounds: counter, key, result
KAT = [((0, 0, 0, 0), (0, 0), (0x6627e8d5, 0xe169c58d, 0xbc57ac4c, 0x9b00dbd8)),
       ((MASK,) * 4, (MASK, MASK), (0x408f276d, 0x41c83b0e, 0xa20bc7c6, 0x6d5451fd)),
       ((0x243f6a88, 0x85a308d3, 0x13198a2e, 0x03707344), (0xa4093822, 0x299f31d0),
        (0xd16cfe09, 0x94fdcceb, 0x5001e420, 0x24126ea1))]
for ctr, key, want in KAT:
    got = tuple(int(x[0]) for x in philox([[w] for w in ctr], key))
    check(got == want, f"Philox4x32-10 {ctr} {key}: {[hex(x) for x in got]}")


def rand_expected(seed, shape, stream):
    """rand's f32 values over shape: counter (i lo, i hi, stream, 0), key (seed lo, seed hi),
    (w >> 8) * 2^-24 of the first word."""
    n = int(np.prod(shape)) if shape else 1
    i = np.arange(n, dtype=np.uint64)
    s = int(seed) & 0xFFFFFFFFFFFFFFFF
    w = philox([i & np.uint64(MASK), i >> np.uint64(32), np.full(n, stream, np.uint64),
                np.zeros(n, np.uint64)], (s & MASK, s >> 32))[0]
    return ((w >> np.uint64(8)).astype(np.float64) * 2.0 ** -24).astype(np.float32).reshape(shape)


PROGRAM = os.path.join(OUT, "rand.fuse")
with open(PROGRAM, "w") as f:
    f.write("""
fn dropout(x: f32[B, C], seed: i64[], p: f32[]) -> f32[B, C] {
    return where(rand(seed, x) < p, 0.0, x / (1.0 - p));
}
fn two(x: f32[A, B, C], seed: i64[]) -> (f32[A, B, C], f32[A, B, C]) {
    return rand(seed, x), rand(seed, x);
}
fn bcast(x: f32[B, C], b: f32[C], seed: i64[]) -> f32[B, C] {
    return x + rand(seed, b);
}
fn noise(v: f32[N], seed: i64[]) -> f32[N] {
    return rand(seed, v) * 2.0;
}
fn helper(x: f32[B, C], seed: i64[]) -> (f32[B, C], f32[B, C]) {
    return noise(x, seed), noise(x, seed) + rand(seed, x);
}
fn lit(x: f32[N]) -> (f32[N], f32[]) {
    return rand(-3, x), rand(5, 1.0);
}
""")

rng = np.random.default_rng(7)


def save(name, a, case=""):
    """The input `name` of a case, in a file of its own."""
    p = os.path.join(OUT, f"{case}_{name}.npy")
    np.save(p, a)
    return (name, p)


def run_fn(fn, inputs, nres, target, nofuse, case):
    """Runs fn of case `case` (a name no other case uses: its results go to files of its own)."""
    outs = [os.path.join(OUT, f"{fn}_{case}_{target}_{nofuse}_{i}.npy") for i in range(nres)]
    rc, err = fusec_run(PROGRAM, fn, inputs, outs, target, ["--no-fuse"] if nofuse else [])
    check(rc == 0, f"{fn} on {target}{' --no-fuse' if nofuse else ''}: exit {rc}\n{err}")
    return [np.load(o) if rc == 0 else None for o in outs]


def same_bits(tag, got, want):
    ok = got is not None and got.shape == want.shape and got.dtype == want.dtype and \
        np.array_equal(got.view(np.uint32), want.view(np.uint32))
    if not ok and got is not None and got.shape == want.shape:
        bad = np.argwhere(got.view(np.uint32) != want.view(np.uint32))
        tag += f": first difference at {tuple(bad[0])}: {got[tuple(bad[0])]} != " \
               f"{want[tuple(bad[0])]}" if bad.size else ": dtype"
    check(ok, tag)


def seed_case(k, seed, target, nofuse, dropout, cases):
    """Seed number k on target, fused or not: the dropout, then each of cases."""
    flags = " --no-fuse" if nofuse else ""
    progress(f"seed {seed} on {target}{flags}")
    inputs, x, p, r0 = dropout
    got = run_fn("dropout", inputs, 1, target, nofuse, k)[0]
    if got is None:
        return
    tag = f"dropout seed {seed} on {target}{flags}"
    check(np.array_equal(got == 0, r0 < p), f"{tag}: the dropped elements")
    check(np.allclose(got, np.where(r0 < p, 0, x / (1 - p)), rtol=1e-6), f"{tag}: values")
    for fn, inputs, want in cases:
        got = run_fn(fn, inputs, len(want), target, nofuse, k)
        for i, w in enumerate(want):
            same_bits(f"{fn} seed {seed} on {target}{flags} result {i}", got[i], w)


def lit_case(target, x):
    progress(f"lit on {target}")
    got = run_fn("lit", [x], 2, target, False, "lit")
    same_bits(f"lit on {target} result 0", got[0], rand_expected(-3, (4099,), 0))
    same_bits(f"lit on {target} result 1", got[1], rand_expected(5, (), 1))


# each seed's inputs drawn and saved (under names of the seed's own) before its cases are
# handed to later(), which may run them on FUSEC_TEST_JOBS threads
B, C, A = 37, 1001, 3
for k, seed in enumerate((0, 123456789012345, -987654321987, (1 << 63) - 1, -(1 << 63))):
    x = rng.uniform(-2, 2, (B, C)).astype(np.float32)
    x3 = rng.uniform(-2, 2, (A, 5, 7)).astype(np.float32)
    b = rng.uniform(-2, 2, C).astype(np.float32)
    p = np.array(0.3, np.float32)
    sd = save("seed", np.array(seed, np.int64), f"{k}")
    cases = [
        ("two", [save("x", x3, f"two{k}"), sd], [rand_expected(seed, (A, 5, 7), 0),
                                           rand_expected(seed, (A, 5, 7), 1)]),
        ("bcast", [save("x", x, f"bcast{k}"), save("b", b, f"{k}"), sd],
         [x + rand_expected(seed, (C,), 0)]),
        # noise is inlined twice (streams 0 and 1), each over the [B, C] it is mapped over
        ("helper", [save("x", x, f"helper{k}"), sd],
         [rand_expected(seed, (B, C), 0) * np.float32(2),
          rand_expected(seed, (B, C), 1) * np.float32(2) + rand_expected(seed, (B, C), 2)]),
    ]
    # the dropout: exactly the elements whose draw is below p are zero (the kept ones are
    # x / (1 - p), which the reference computes in float64: close, not the same bits)
    r0 = rand_expected(seed, (B, C), 0)
    x = np.where(x == 0, np.float32(1), x)
    dropout = ([save("x", x, f"dropout{k}"), sd, save("p", p, f"{k}")], x, p, r0)
    for target in sorted({"ref", TARGET}):
        for nofuse in (False, True):
            later(seed_case, k, seed, target, nofuse, dropout, cases)

for target in sorted({"ref", TARGET}):
    later(lit_case, target, save("x", np.zeros(4099, np.float32), f"lit_{target}"))

finish()
