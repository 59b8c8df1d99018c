#!/usr/bin/env python3
"""bench/cpu_ab.py: two builds of one function, side by side in one process, on the CPU.

On a shared, noisy machine two runs of the same kernel a minute apart can differ by 30-50%,
more than most changes worth measuring. This builds the function twice ahead of time (fusec
--emit=lib: with two fusec binaries, or one binary under two environments), links both
libraries into one generated C program and calls A and B alternately on the same inputs, so
that whatever the machine does meets both alike. It prints the medians and minima of both and
the ratio of the medians, and checks that A and B write the same bits.

    python3 bench/cpu_ab.py FILE.fuse -f FN --dim R=16384 --dim C=256 \\
        --a /tmp/base/build/fusec --b build/fusec [--cpu sapphirerapids] [--threads 2]
    python3 bench/cpu_ab.py FILE.fuse -f FN --dim N=4194304 --b-env SOME_KNOB=1

--a-env/--b-env set variables for that side's build only (a knob that changes the generated
code); --env sets one for the run (FUSEC_CPU_STREAM_MIN_BYTES and the like affect both).
The inputs are random: floats in [-5, 5], integers in [-100, 100], bools half true.
"""
import argparse
import os
import re
import shutil
import subprocess
import sys
import tempfile

HERE = os.path.dirname(os.path.abspath(__file__))
SRC = os.path.dirname(HERE)

CTYPE = {"f32": "float", "f64": "double", "i32": "int32_t", "i64": "int64_t", "bool": "bool",
         "f16": "uint16_t", "bf16": "uint16_t"}


def die(msg):
    sys.exit(f"cpu_ab.py: {msg}")


def parse_tensor(text):
    """'f32[R, C]' -> ('f32', ['R', 'C']); 'f32' or 'f32[]' -> ('f32', [])."""
    m = re.fullmatch(r"\s*(\w+)\s*(?:\[(.*)\])?\s*", text)
    if not m or m.group(1) not in CTYPE:
        die(f"cannot read the type {text!r}")
    dims = [d.strip() for d in (m.group(2) or "").split(",") if d.strip()]
    return m.group(1), dims


def split_top(text):
    """Splits at the commas outside brackets."""
    out, depth, cur = [], 0, ""
    for ch in text:
        depth += ch == "["
        depth -= ch == "]"
        if ch == "," and depth == 0:
            out.append(cur)
            cur = ""
        else:
            cur += ch
    if cur.strip():
        out.append(cur)
    return out


def signature(header, prefix, fn):
    """The parameters and results of fn from the comment above its entry point."""
    text = open(header).read()
    m = re.search(r"/\* fn " + re.escape(fn) + r"\((.*?)\) -> (.*?) \*/\s*int " +
                  re.escape(prefix + "_" + fn) + r"\(([^)]*)\)", text, re.S)
    if not m:
        die(f"{header} has no entry point {prefix}_{fn}")
    params = [parse_tensor(p.split(":", 1)[1]) for p in split_top(m.group(1))]
    res = m.group(2).strip()
    if res.startswith("("):
        res = res[1:-1]
    results = [parse_tensor(r) for r in split_top(res)]
    syms = re.findall(r"int64_t (\w+)", m.group(3))
    return params, results, syms


def count(dims, sizes):
    n = 1
    for d in dims:
        if d.isdigit():
            n *= int(d)
        elif d in sizes:
            n *= sizes[d]
        else:
            die(f"no --dim for {d}")
    return n


def fill(dtype):
    if dtype in ("f32", "f64"):
        return "(%s)(rnd() * 10.0 - 5.0)" % CTYPE[dtype]
    if dtype == "f16":
        return "f2h((float)(rnd() * 10.0 - 5.0))"
    if dtype == "bf16":
        return "f2bf((float)(rnd() * 10.0 - 5.0))"
    if dtype == "bool":
        return "rnd() < 0.5"
    return "(%s)(rnd() * 201.0) - 100" % CTYPE[dtype]


DRIVER = r"""
#include "A.h"
#include "B.h"
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
static double now(void) { struct timespec t; clock_gettime(CLOCK_MONOTONIC, &t);
                          return t.tv_sec + t.tv_nsec * 1e-9; }
static unsigned long long s = 88172645463325252ull;
static double rnd(void) { s ^= s << 13; s ^= s >> 7; s ^= s << 17; return (s >> 11) * 0x1p-53; }
static uint16_t f2h(float f) { _Float16 h = (_Float16)f; uint16_t u; memcpy(&u, &h, 2); return u; }
static uint16_t f2bf(float f) { uint32_t u; memcpy(&u, &f, 4); return (uint16_t)(u >> 16); }
static int cmp(const void *a, const void *b) { double x = *(const double *)a, y = *(const double *)b;
                                               return x < y ? -1 : x > y; }
static void *buf(size_t bytes) { void *p = aligned_alloc(64, (bytes + 63) / 64 * 64);
                                 if (!p) { puts("out of memory"); exit(1); } return p; }
int main(void) {
    int reps = REPS;
DECLS
    if (CALL_A || CALL_B) { printf("a call failed: %s %s\n", A_last_error(), B_last_error()); return 1; }
    int same = 1;
COMPARE
    double *ta = malloc(sizeof(double) * reps), *tb = malloc(sizeof(double) * reps);
    for (int r = 0; r < reps; r++) {
        double t = now(); CALL_A; ta[r] = now() - t;
        t = now(); CALL_B; tb[r] = now() - t;
    }
    qsort(ta, reps, sizeof *ta, cmp);
    qsort(tb, reps, sizeof *tb, cmp);
    printf("A (%s): median %.3f ms, min %.3f\n", A_target(), ta[reps / 2] * 1e3, ta[0] * 1e3);
    printf("B (%s): median %.3f ms, min %.3f\n", B_target(), tb[reps / 2] * 1e3, tb[0] * 1e3);
    printf("A / B (medians): %.3f; %s\n", ta[reps / 2] / tb[reps / 2],
           same ? "the same bits" : "THE RESULTS DIFFER");
    return same ? 0 : 2;
}
"""


def driver(params, results, syms, sizes, reps):
    decls, args_a, args_b, compare = [], [], [], []
    for i, (dt, dims) in enumerate(params):
        n = count(dims, sizes)
        decls.append(f"    {CTYPE[dt]} *in{i} = buf({n} * sizeof({CTYPE[dt]}));")
        decls.append(f"    for (long k = 0; k < {n}L; k++) in{i}[k] = {fill(dt)};")
        args_a.append(f"in{i}")
        args_b.append(f"in{i}")
    for i, (dt, dims) in enumerate(results):
        n = count(dims, sizes)
        for side in "ab":
            decls.append(f"    {CTYPE[dt]} *{side}{i} = buf({n} * sizeof({CTYPE[dt]}));")
            decls.append(f"    memset({side}{i}, 0xa5, {n} * sizeof({CTYPE[dt]}));")
        args_a.append(f"a{i}")
        args_b.append(f"b{i}")
        compare.append(f"    same &= !memcmp(a{i}, b{i}, {n} * sizeof({CTYPE[dt]}));")
    dims = [f"{sizes[d]}" for d in syms]
    call = lambda side, a: f"{side}_FN({', '.join(a + dims + ['NULL'])})"  # noqa: E731
    return (DRIVER.replace("REPS", str(reps)).replace("DECLS", "\n".join(decls))
            .replace("COMPARE", "\n".join(compare))
            .replace("CALL_A", call("A", args_a)).replace("CALL_B", call("B", args_b)))


def main():
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("file")
    ap.add_argument("-f", dest="fn", required=True)
    ap.add_argument("--dim", action="append", default=[], metavar="NAME=SIZE")
    ap.add_argument("--a", default=os.path.join(SRC, "build", "fusec"), help="fusec for A")
    ap.add_argument("--b", default=os.path.join(SRC, "build", "fusec"), help="fusec for B")
    ap.add_argument("--a-env", action="append", default=[], metavar="K=V")
    ap.add_argument("--b-env", action="append", default=[], metavar="K=V")
    ap.add_argument("--env", action="append", default=[], metavar="K=V", help="for the run")
    ap.add_argument("--cpu", help="fusec's --cpu for both, a name of its table (default: a "
                    "library's, x86-64-v2 to v4, the best of which the host runs)")
    ap.add_argument("--threads", type=int, help="FUSEC_NUM_THREADS for the run")
    ap.add_argument("--reps", type=int, default=200, help="calls of each (default 200)")
    ap.add_argument("--cc", default=os.environ.get("CC", "cc"))
    a = ap.parse_args()
    sizes = {}
    for d in a.dim:
        k, _, v = d.partition("=")
        if not v.isdigit():
            die(f"--dim {d!r}: want NAME=SIZE")
        sizes[k] = int(v)
    kv = lambda items: dict(i.split("=", 1) for i in items)  # noqa: E731
    tmp = tempfile.mkdtemp(prefix="fusec-ab-")
    try:
        for side, fusec, extra in (("A", a.a, a.a_env), ("B", a.b, a.b_env)):
            cmd = [fusec, "--target=cpu", "--emit=lib", "--no-cache", "-o",
                   os.path.join(tmp, side), a.file]
            cmd += [f"--cpu={a.cpu}"] if a.cpu else []
            p = subprocess.run(cmd, capture_output=True, text=True,
                               env=dict(os.environ, **kv(extra)))
            if p.returncode:
                die(f"building {side}: {p.stderr.strip()}")
        params, results, syms = signature(os.path.join(tmp, "A.h"), "A", a.fn)
        src = os.path.join(tmp, "ab.c")
        with open(src, "w") as f:
            f.write(driver(params, results, syms, sizes, a.reps).replace("_FN(", "_" + a.fn + "("))
        exe = os.path.join(tmp, "ab")
        p = subprocess.run([a.cc, "-O2", "-I", tmp, src, "-L", tmp, "-lA", "-lB", "-lpthread",
                            "-lm", "-ldl", "-o", exe], capture_output=True, text=True)
        if p.returncode:
            die(f"building the driver: {p.stderr.strip()}")
        env = dict(os.environ, **kv(a.env))
        if a.threads:
            env["FUSEC_NUM_THREADS"] = str(a.threads)
        p = subprocess.run([exe], env=env)
        return p.returncode
    finally:
        shutil.rmtree(tmp, ignore_errors=True)


if __name__ == "__main__":
    sys.exit(main())
