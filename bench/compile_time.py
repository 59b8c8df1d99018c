#!/usr/bin/env python3
"""bench/compile_time.py: how long fusec takes to compile deep chains of math (issue 29), cold.

Each program applies one function n times in a chain (`let a0 = sin(x); let a1 = sin(a0);
...`: the same IR as nesting the calls, which the parser limits to 200 levels), alone ("fwd")
or with its gradient (`fn d = grad(f);`, "grad"); --shapes adds other programs of size n that
hold as much math (SHAPES below: sums of independent calls, nested selects, chains of row or
column reductions, cheap arithmetic, many results). Every one is compiled with --no-cache, for
the CPU (`--target=cpu`) and for CUDA (`--target=cuda --arch=sm_90 --emit=cubin`: NVRTC builds
cubins without a GPU). Reported per compile: the CPU time of the fusec process (user +
system, which a loaded machine inflates less than the wall time), the wall time, and the
phases `fusec -v` prints (CPU: LLVM's O3 and code generation; CUDA: NVRTC). A compile that
runs past --timeout is stopped and reported as "> T", and so are the larger sizes of the same
shape, op, dtype and mode, which are not tried.

    python3 bench/compile_time.py --fusec build/fusec [--targets cpu,cuda] [--shapes chain]
        [--ops sin,exp,tanh,erf,log,pow] [--depths 10,30,60,100,150,300] [--dtypes f32,f64]
        [--modes fwd,grad] [--timeout 120] [--json OUT.json]

Prints a markdown table with the host's CPU model, the date and the commit, for
bench/RESULTS.md."""
import argparse
import datetime
import itertools
import json
import os
import re
import resource
import subprocess
import sys
import tempfile
import time

HERE = os.path.dirname(os.path.abspath(__file__))
sys.path.insert(0, HERE)
from cpu_levels import host  # noqa: E402

# each op as applied to a value (kept in its domain where that is cheap)
OPS = {"sin": "sin({})", "exp": "exp(0.5 * {})", "tanh": "tanh({})", "erf": "erf({})",
       "log": "log(1.5 + {})", "pow": "pow({}, 0.75)"}


def _chain(op, n, dtype, step, dims="N"):
    """fn f(x) whose n lets each apply step(f, prev, i) (f: op's form, prev: "x", then the
    previous let), returning the last."""
    t = f"{dtype}[{dims}]"
    body, prev = [], "x"
    for i in range(n):
        body.append(f"    let a{i} = {step(OPS[op], prev, i)};")
        prev = f"a{i}"
    return f"fn f(x: {t}) -> {t} {{\n" + "\n".join(body) + f"\n    return {prev};\n}}"


def _apply(f, p, i):
    return f.format(p)


def _sum_of(f, p, i):
    term = f.format(f"(x * {1 + i / 1000})")
    return term if i == 0 else f"{p} + {term}"


def _select(f, p, i):
    return f"where(x > {i / 100}, {f.format(p)}, {f.format(f'({p} * 0.5)')})"


def _row_softmax(f, p, i):
    return f.format(f"({p} - max({p}, axis=1))")


def _column_softmax(f, p, i):
    return f.format(f"({p} - max({p}, axis=0))")


def _cheap(f, p, i):
    return f"{p} * 1.0001 + x"


# The shapes of program timed, each of size n: "chain" applies op n times in a chain (the
# issue's program); the others are the ways a kernel can hold as much math otherwise:
# "independent" sums op of n different values, "where" nests n selects between op of two
# values, "rows" and "columns" chain n dependent reductions (exp(a - max(a)) again and again)
# over rows or columns, "arith" chains 2n cheap operations, "results" returns op of n values.
SHAPES = {"chain": (_apply, "N"), "independent": (_sum_of, "N"), "where": (_select, "N"),
          "rows": (_row_softmax, "R, C"), "columns": (_column_softmax, "R, C"),
          "arith": (_cheap, "N")}


def program(shape, op, n, dtype, grad):
    """The source of shape (SHAPES, or "results") of size n, with `fn d = grad(f);` if grad."""
    if shape == "results":
        t = f"{dtype}[N]"
        src = (f"fn f(x: {t}) -> ({', '.join([t] * n)}) {{\n    return "
               + ", ".join(OPS[op].format(f"(x * {1 + i / 1000})") for i in range(n)) + ";\n}")
    else:
        src = _chain(op, n, dtype, *SHAPES[shape])
    return src + ("\nfn d = grad(f);\n" if grad else "\n")


def phases(target, text):
    """The phase timings (ms) of `fusec -v`'s output."""
    if target == "cpu":
        m = re.search(r"O3 ([\d.]+) ms, codegen ([\d.]+) ms", text)
        return {"o3_ms": float(m.group(1)), "codegen_ms": float(m.group(2))} if m else {}
    m = re.search(r"NVRTC ([\d.]+) ms", text)
    return {"nvrtc_ms": float(m.group(1))} if m else {}


def compile_once(fusec, target, path, timeout):
    """One cold compile: {cpu_s, wall_s, phases...}, or {timeout: T} or {error: ...}."""
    args = [fusec, "-v", "--no-cache", f"--target={target}", path]
    if target == "cuda":
        args[3:3] = ["--arch=sm_90", "--emit=cubin", "-o", os.devnull]
    before = resource.getrusage(resource.RUSAGE_CHILDREN)
    t0 = time.monotonic()
    try:
        p = subprocess.run(args, capture_output=True, text=True, timeout=timeout)
    except subprocess.TimeoutExpired:
        return {"timeout": timeout}
    wall = time.monotonic() - t0
    after = resource.getrusage(resource.RUSAGE_CHILDREN)
    if p.returncode != 0:
        return {"error": (p.stderr.strip().splitlines() or ["?"])[-1]}
    r = {"cpu_s": (after.ru_utime - before.ru_utime) + (after.ru_stime - before.ru_stime),
         "wall_s": wall}
    r.update(phases(target, p.stdout + p.stderr))
    return r


def cell(r):
    if "timeout" in r:
        return f"> {r['timeout']:g}"
    if "error" in r:
        return "error"
    return f"{r['cpu_s']:.2f} ({r['wall_s']:.2f})"


def phase_cell(target, r):
    if "cpu_s" not in r:
        return ""
    if target == "cpu" and "o3_ms" in r:
        return f"{r['o3_ms'] / 1e3:.2f} + {r['codegen_ms'] / 1e3:.2f}"
    if "nvrtc_ms" in r:
        return f"{r['nvrtc_ms'] / 1e3:.2f}"
    return ""


def series(a, tmp, target, shape, op, dtype, mode):
    """One shape, op, dtype and mode at each size, smallest first; past the timeout once, the
    larger sizes are not tried."""
    rows, slow = [], False
    for n in [int(d) for d in a.depths.split(",")]:
        r = {"timeout": a.timeout} if slow else None
        if r is None:
            path = os.path.join(tmp, f"{shape}_{op}_{dtype}_{mode}_{n}.fuse")
            with open(path, "w") as f:
                f.write(program(shape, op, n, dtype, mode == "grad"))
            r = compile_once(a.fusec, target, path, a.timeout)
        slow = "timeout" in r
        r.update(target=target, shape=shape, op=op, dtype=dtype, mode=mode, n=n)
        rows.append(r)
        print(f"| {target} | {shape} | {op} | {dtype} | {mode} | {n} | {cell(r)} "
              f"| {phase_cell(target, r)} |", flush=True)
    return rows


def main():
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("--fusec", default=os.path.join(os.path.dirname(HERE), "build", "fusec"))
    ap.add_argument("--targets", default="cpu,cuda")
    ap.add_argument("--shapes", default="chain", help=",".join(list(SHAPES) + ["results"]))
    ap.add_argument("--ops", default=",".join(OPS))
    ap.add_argument("--depths", default="10,30,60,100,150,300", help="sizes n of each shape")
    ap.add_argument("--dtypes", default="f32,f64")
    ap.add_argument("--modes", default="fwd,grad")
    ap.add_argument("--timeout", type=float, default=120.0)
    ap.add_argument("--json", help="also write every measurement to this file")
    a = ap.parse_args()
    model, width, commit = host()
    print(f"compile time, cold (--no-cache): {model} ({width}), {datetime.date.today()}, "
          f"commit {commit}; CPU seconds of the fusec process (wall seconds); phases: "
          f"CPU O3 + codegen, CUDA NVRTC (wall seconds)\n")
    print("| target | shape | op | dtype | mode | n | CPU s (wall s) | phases s |")
    print("|---|---|---|---|---|---:|---:|---:|")
    rows = []
    with tempfile.TemporaryDirectory(prefix="fusec-ct-") as tmp:
        lists = (getattr(a, k).split(",") for k in ("targets", "shapes", "ops", "dtypes", "modes"))
        for target, shape, op, dtype, mode in itertools.product(*lists):
            rows += series(a, tmp, target, shape, op, dtype, mode)
    if a.json:
        with open(a.json, "w") as f:
            json.dump({"cpu": model, "date": str(datetime.date.today()), "commit": commit,
                       "rows": rows}, f, indent=1)


if __name__ == "__main__":
    main()
