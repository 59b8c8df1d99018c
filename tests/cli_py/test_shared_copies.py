#!/usr/bin/env python3
"""tests/cli_py/test_shared_copies.py: the copy functions of short rows, which modules that
fusec's own loader loads call instead of holding (codegen/cpu/llvm.c, narrow_copy_fn;
driver/cpu/cpu_backend.c, copy_resolve): built once for the target, kept in the disk cache
beside the modules, and found again there.

Row kernels over rows of 3, 8, 12, 20 and 31 elements (every path of the copies: loops of the
row's length, transposes of one and two vectors a row, the unit's rows past its last group of
16) of f32, f16, i64 and bool (each size of element a function of its own), 300 rows (two
units of 128 and a part of one), must give the very bits that objects holding their own copies
give (FUSEC_CPU_LOADER=orc), from a cold cache, from a cache whose copy functions were deleted
or damaged (rebuilt; the module's entry found), from two processes at once on a cold cache,
and without the cache. Skipped (77) without the CPU backend or fusec's loader."""
import os
import subprocess
import sys

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
import fusectest as ft  # noqa: E402
from fusectest import check, np  # noqa: E402

SOURCE = """
fn zzrows_f32(x: f32[R, C]) -> f32[R, C] {
    let e = exp(x - max(x, axis=1));
    return e / sum(e, axis=1);
}
fn zzrows_f16(x: f16[R, C]) -> f16[R, C] {
    return x - mean(x, axis=1);
}
fn zzrows_i64(x: i64[R, C]) -> i64[R, C] {
    return x - max(x, axis=1);
}
fn zzrows_bool(x: f32[R, C], m: bool[R, C]) -> f32[R, C] {
    return where(m, x, 0.0) - sum(x, axis=1);
}
"""
ROWS = 300
LENGTHS = (3, 8, 12, 20, 31)
FUNCS = {"zzrows_f32": ("f32",), "zzrows_f16": ("f16",), "zzrows_i64": ("i64",),
         "zzrows_bool": ("f32", "bool")}


def inputs(d, rng):
    """{(fn, C): [(name, path)]}: fresh random non-zero inputs for every function and length."""
    out = {}
    for fn, dtypes in FUNCS.items():
        for c in LENGTHS:
            files = []
            for i, dt in enumerate(dtypes):
                shape = (ROWS, c)
                if dt == "bool":
                    a = rng.random(shape) < 0.5
                elif dt == "i64":
                    a = rng.integers(-10**12, 10**12, shape, dtype=np.int64)
                    a[a == 0] = 7
                else:
                    a = ft.rand(shape, rng).astype(np.float16 if dt == "f16" else np.float32)
                p = os.path.join(d, f"{fn}_{c}_{i}.npy")
                np.save(p, a)
                files.append(("xm"[i], p))
            out[(fn, c)] = files
    return out


def run_all(d, ins, tag, env, extra=()):
    """Every function at every length: {(fn, C): result array}, or None where a run failed."""
    res = {}
    for (fn, c), files in ins.items():
        o = os.path.join(d, f"{tag}_{fn}_{c}.npy")
        rc, err = ft.fusec_run(PROG, fn, files, [o], "cpu", extra, env=env)
        check(rc == 0, f"{tag}: {fn} over rows of {c}: exit {rc}: {err.strip()[-400:]}")
        res[(fn, c)] = np.load(o) if rc == 0 else None
    return res


def same(got, want, tag):
    """Every result of got bit for bit want's (a NaN as any NaN)."""
    for k, g in got.items():
        w = want.get(k)
        ok = g is not None and w is not None and g.shape == w.shape and \
            not ft.bits_differ(g, w).any()
        check(ok, f"{tag}: {k[0]} over rows of {k[1]}: bits differ from the self-contained "
                  f"objects'")


def entries(cache):
    """(copy function entries, module entries) in cache: entry files whose object defines a
    copy function and names none of the program's functions, and those that name them."""
    copies, modules = [], []
    for f in sorted(os.listdir(cache)):
        if not (f.startswith("e-") and f.endswith(".bin")):
            continue
        data = open(os.path.join(cache, f), "rb").read()
        if b"zzrows" in data:
            modules.append(f)
        elif b"fusec_ncopy_" in data:
            copies.append(f)
    return copies, modules


def env_with(**kw):
    e = dict(os.environ)
    e.pop("FUSEC_CACHE_DIR", None)
    e.pop("FUSEC_CPU_LOADER", None)
    e.update(kw)
    return e


def main():
    global PROG
    ft.target_or_skip()
    d = ft.tmpdir()
    PROG = os.path.join(d, "rows.fuse")
    with open(PROG, "w") as f:
        f.write(SOURCE)
    rng = np.random.default_rng(int.from_bytes(os.urandom(4), "little"))
    ins = inputs(d, rng)
    # the self-contained objects (ORC loads them): the bits every other run must give
    want = run_all(d, ins, "orc", env_with(FUSEC_CPU_LOADER="orc", FUSEC_CACHE_DIR=d + "/c0"))
    rc, out, err = ft.run(["-v", "--target=cpu", "--no-cache", PROG], env=env_with())
    if "loaded by fusec" not in out + err:
        print("fusec's own loader does not run here: nothing to share")
        ft.finish()

    cache = os.path.join(d, "c1")
    same(run_all(d, ins, "cold", env_with(FUSEC_CACHE_DIR=cache)), want, "cold cache")
    copies, modules = entries(cache)
    # f32 and bool rows copy 32-bit and 8-bit elements, f16 16-bit, i64 64-bit: in and out
    check(len(copies) >= 7, f"copy functions in the cache: {len(copies)}, want 7 or 8")
    # `fusec run -f FN` builds FN's module alone
    check(len(modules) == len(FUNCS),
          f"module entries in the cache: {len(modules)}, want {len(FUNCS)}")

    # the copies deleted, then damaged: rows of 8 and 20 (a loop of the row's length, a
    # transpose) of every function, which call every copy function of the cold run
    some = {k: v for k, v in ins.items() if k[1] in (8, 20)}
    for f in copies:  # gone: rebuilt, the module's entry found
        os.remove(os.path.join(cache, f))
    same(run_all(d, some, "rebuilt", env_with(FUSEC_CACHE_DIR=cache)), want,
         "copies deleted from the cache")
    copies2, modules2 = entries(cache)
    check(len(copies2) == len(copies), f"copies stored again: {len(copies2)} of {len(copies)}")
    check(modules2 == modules, f"the module's entry kept: {modules2} against {modules}")

    for f in copies2:  # damaged: refused by the cache's checksums, rebuilt
        p = os.path.join(cache, f)
        b = bytearray(open(p, "rb").read())
        b[len(b) // 2] ^= 0x5A
        open(p, "wb").write(bytes(b))
    f32 = {k: v for k, v in some.items() if k[0] == "zzrows_f32"}
    same(run_all(d, f32, "damaged", env_with(FUSEC_CACHE_DIR=cache)), want,
         "copies damaged in the cache")

    # two processes at once on a cold cache: each builds or waits for the other's entries
    cold = os.path.join(d, "c2")
    procs = []
    for i in range(2):
        args = [ft.FUSEC, "run", PROG, "-f", "zzrows_f16", "--target=cpu"]
        for name, p in ins[("zzrows_f16", 8)]:
            args += ["--in", f"{name}={p}"]
        args += ["--out", os.path.join(d, f"race{i}.npy")]
        procs.append(subprocess.Popen(args, env=ft.fusec_env(env_with(FUSEC_CACHE_DIR=cold)),
                                      stdout=subprocess.PIPE, stderr=subprocess.PIPE))
    for i, p in enumerate(procs):
        _, err = p.communicate(timeout=600)
        check(p.returncode == 0, f"race {i}: exit {p.returncode}: {err.decode()[-400:]}")
        if p.returncode == 0:
            same({("zzrows_f16", 8): np.load(os.path.join(d, f"race{i}.npy"))}, want,
                 f"race {i}")

    # without the cache (a compile each run)
    few = {k: v for k, v in ins.items() if k == ("zzrows_f32", 20)}
    same(run_all(d, few, "nocache", env_with(FUSEC_CACHE_DIR=d + "/c3"), ("--no-cache",)),
         want, "no cache")
    check(not os.path.exists(d + "/c3") or not os.listdir(d + "/c3"),
          "--no-cache wrote to the cache")
    ft.finish()


if __name__ == "__main__":
    main()
