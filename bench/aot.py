#!/usr/bin/env python3
"""bench/aot.py: a library built ahead of time (fusec --emit=lib) against the JIT, on the CPU.

bench/aot_calls.c is built twice, against examples/aot's library (kernels.h, libkernels.a) and
against libfusec (compiling examples/gelu.fuse, softmax.fuse and layernorm.fuse on first use);
then --rounds interleaved rounds time, for each: a new process's time from exec to its first
results of all three (small: GELU [1003], softmax [37, 100], layernorm bf16 [37, 96]), the JIT
with a warm kernel cache and with an empty one; and one call's time in a loop (GELU on
1000 elements). Prints medians and minima over the rounds, and the sizes of the library, of
each program and of the JIT's LLVM module.

    python3 bench/aot.py [--build build] [--rounds 7]
"""
import argparse
import os
import shutil
import statistics
import subprocess
import sys
import tempfile
import time

HERE = os.path.dirname(os.path.abspath(__file__))
SRC = os.path.dirname(HERE)
EX = [os.path.join(SRC, "examples", f + ".fuse") for f in ("gelu", "softmax", "layernorm")]


def sh(args, **kw):
    p = subprocess.run(args, capture_output=True, text=True, **kw)
    if p.returncode != 0:
        sys.exit(f"aot.py: {' '.join(args)}: {p.stdout}{p.stderr}")
    return p.stdout


def wall(args, env):
    t0 = time.perf_counter()
    sh(args, env=env)
    return (time.perf_counter() - t0) * 1e3


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--build", default=os.path.join(SRC, "build"))
    ap.add_argument("--rounds", type=int, default=7)
    ap.add_argument("--cc", default=os.environ.get("CC", "cc"))
    a = ap.parse_args()
    d = tempfile.mkdtemp(prefix="fusec-aot-")
    try:
        fusec = os.path.join(a.build, "fusec")
        t0 = time.perf_counter()
        sh([fusec, "--emit=lib", "--target=cpu", "-o", os.path.join(d, "kernels"), *EX,
            "--cache-dir", os.path.join(d, "libcache")])
        lib_cold = (time.perf_counter() - t0) * 1e3
        t0 = time.perf_counter()
        sh([fusec, "--emit=lib", "--target=cpu", "-o", os.path.join(d, "kernels"), *EX,
            "--cache-dir", os.path.join(d, "libcache")])
        lib_warm = (time.perf_counter() - t0) * 1e3
        src = os.path.join(HERE, "aot_calls.c")
        aot, jit = os.path.join(d, "aot_calls_aot"), os.path.join(d, "aot_calls_jit")
        sh([a.cc, "-std=c11", "-O2", "-DFUSEC_AOT", src, "-I", d, "-L", d, "-lkernels",
            "-lpthread", "-lm", "-ldl", "-o", aot])
        sh([a.cc, "-std=c11", "-O2", src, "-I", os.path.join(SRC, "include"),
            os.path.join(a.build, "libfusec.a"), "-lxxhash", "-lpthread", "-lm", "-ldl", "-o",
            jit])
        env = dict(os.environ)
        warm = dict(env, FUSEC_CACHE_DIR=os.path.join(d, "warm"))
        sh([jit, "first", SRC], env=warm)
        t = {k: [] for k in ("aot", "jit warm", "jit cold", "aot call", "jit call")}
        for r in range(a.rounds):
            t["aot"].append(wall([aot, "first"], env))
            t["jit warm"].append(wall([jit, "first", SRC], warm))
            cold = dict(env, FUSEC_CACHE_DIR=os.path.join(d, f"cold{r}"))
            t["jit cold"].append(wall([jit, "first", SRC], cold))
            t["aot call"].append(float(sh([aot, "loop", "200000"], env=env)) / 1e6)
            t["jit call"].append(float(sh([jit, "loop", "200000", SRC], env=warm)) / 1e6)
        print(f"{a.rounds} interleaved rounds, ms (min / median)")
        for k, v in t.items():
            scale, unit = (1e3, "us") if "call" in k else (1, "ms")
            print(f"  {k:9s} {min(v) * scale:9.3f} / {statistics.median(v) * scale:9.3f} {unit}")
        print(f"  --emit=lib of the three files: {lib_cold:.0f} ms cold, {lib_warm:.0f} ms with "
              "its kernels in the cache")
        for name, p in (("libkernels.a", os.path.join(d, "libkernels.a")), ("AOT program", aot),
                        ("JIT program (libfusec.a)", jit),
                        ("libfusec_llvm.so", os.path.join(a.build, "libfusec_llvm.so"))):
            print(f"  {name:26s} {os.path.getsize(p) / 1024:9.0f} KiB")
    finally:
        shutil.rmtree(d, ignore_errors=True)


if __name__ == "__main__":
    main()
