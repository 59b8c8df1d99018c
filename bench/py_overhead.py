#!/usr/bin/env python3
"""bench/py_overhead.py: what a launch from Python costs over the same launch from C, on small
tensors (where the call, not the kernel, is the time), in one run: bench/launch_loop.c (built
here against the same libfusec.so) times fusec_launch and fusec_plan_launch in a C loop; the
package (python/fusec) times m.fn(x, out=y), m.fn(x) and p() on numpy arrays (and PyTorch
tensors when it is installed); then the parts of a call, to say where the time goes. Rounds
alternate C and Python; the figures are medians over rounds of each round's mean per call.

    python3 bench/py_overhead.py [--lib build/libfusec.so] [--rounds 7]

The results go into bench/RESULTS.md by hand ("Python call overhead")."""
import argparse
import json
import os
import platform
import statistics
import subprocess
import sys
import tempfile
import timeit

SRC = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
# (file, function, dims, how each input is made: its numpy shape)
WORKLOADS = [
    ("examples/gelu.fuse", "gelu", {"N": 1024}, [(1024,)]),
    ("examples/bias_gelu_stats.fuse", "bias_gelu_stats", {"B": 4, "C": 256}, [(4, 256), (256,)]),
]


def build_c(lib, out):
    cc = os.environ.get("CC", "cc")
    subprocess.run([cc, "-O2", "-std=c11", "-D_ISOC11_SOURCE", "-D_POSIX_C_SOURCE=200809L",
                    "-I", os.path.join(SRC, "include"), os.path.join(SRC, "bench",
                                                                     "launch_loop.c"),
                    "-o", out, lib, "-Wl,-rpath," + os.path.dirname(lib)], check=True)


def c_times(exe, path, fn, dims, reps):
    """(launch ns, plan launch ns) of one round of the C loop."""
    args = [exe, os.path.join(SRC, path), fn, str(reps), "1"]
    args += ["%s=%d" % kv for kv in dims.items()]
    r = json.loads(subprocess.run(args, check=True, capture_output=True, text=True).stdout)
    return r["launch_ns"][0], r["plan_ns"][0]


def per_call_ns(stmt, ns, reps):
    """The mean of one call over reps calls, the best of three (the noise is all upward)."""
    return min(timeit.repeat(stmt, globals=ns, number=reps, repeat=3)) / reps * 1e9


def python_times(fusec, np, m, fn, shapes, reps, torch=None):
    f = m[fn]
    xs = [np.random.default_rng(1).uniform(-3, 3, size=s).astype(np.float32) for s in shapes]
    outs = f(*xs)
    outs = outs if isinstance(outs, tuple) else (outs,)
    p = f.plan(*xs, out=outs)
    ns = {"f": f, "xs": xs, "outs": outs, "p": p}
    t = {"call_out": per_call_ns("f(*xs, out=outs)", ns, reps),
         "call_alloc": per_call_ns("f(*xs)", ns, reps),
         "plan": per_call_ns("p()", ns, reps)}
    if torch is not None:
        ns["txs"] = [torch.from_numpy(x.copy()) for x in xs]
        ns["touts"] = tuple(torch.from_numpy(o.copy()) for o in outs)
        t["torch_out"] = per_call_ns("f(*txs, out=touts)", ns, reps)
    return t


def parts(fusec, np, m, fn, shapes, reps):
    """Where a call's time goes: the parts timed alone, in this process."""
    from fusec import _capi
    f = m[fn]
    xs = [np.ones(s, np.float32) for s in shapes]
    outs = f(*xs)
    outs = tuple(outs) if isinstance(outs, tuple) else (outs,)
    buf, at, ins_p, outs_p = f._buffer()
    f._fill(tuple(xs) + outs, buf, 0, [], None)  # the descriptors of a real call, for the launch
    ptrs, ptrs_p = f._pointers()
    caps, ats = [], []
    f._collect(tuple(xs) + outs, 0, caps, ats, None, None)  # a real call's DLTensors
    f._pack_ptrs(ptrs, 0, *ats)
    ns = {"f": f, "xs": tuple(xs), "outs": outs, "buf": buf, "at": at, "ins_p": ins_p,
          "outs_p": outs_p, "L": _capi.launch_untyped, "LD": _capi.launch_dlpack_untyped,
          "ptrs": ptrs, "ptrs_p": ptrs_p, "np": np, "x": xs[0], "n": len(xs),
          "nr": len(outs)}
    return {
        # fusec_launch_dlpack through ctypes, every DLTensor ready: the foreign call, the
        # library reading the DLTensors and launching
        "ctypes_launch_dlpack": per_call_ns("LD(f._hp, ptrs_p, n, nr, None)", ns, reps),
        # fusec_launch through ctypes with fusec_tensors ready (what plans are made from)
        "ctypes_launch": per_call_ns("L(f._hp, ins_p, n, outs_p, nr, None)", ns, reps),
        # the foreign call alone: a NULL function is refused at once
        "ctypes_call_only": per_call_ns("LD(None, ptrs_p, n, nr, None)", ns, reps),
        # a call's reading of every array: DLPack export, the DLTensor's address, packed
        "collect_all_arrays": per_call_ns(
            "a = []; f._collect(xs + outs, 0, [], a, None, None); f._pack_ptrs(ptrs, 0, *a)",
            ns, reps),
        # the same arrays read into fusec_tensors in Python (the path before fusec.h 0.5)
        "fill_all_arrays": per_call_ns("f._fill(xs + outs, buf, 0, [], None)", ns, reps),
        "dlpack_export_one": per_call_ns("x.__dlpack__(max_version=(1, 0))", ns, reps),
        "numpy_empty_one": per_call_ns("np.empty(x.shape, np.float32)", ns, reps),
    }


def machine():
    cpu = "?"
    try:
        with open("/proc/cpuinfo") as fh:
            cpu = next(ln.split(":", 1)[1].strip() for ln in fh if ln.startswith("model name"))
    except (OSError, StopIteration):
        pass
    try:
        commit = subprocess.run(["git", "-C", SRC, "rev-parse", "--short", "HEAD"],
                                capture_output=True, text=True).stdout.strip()
    except OSError:
        commit = "?"
    return "%s, %d cores; Python %s; commit %s" % (cpu, os.cpu_count(), platform.python_version(),
                                                   commit or "?")


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--lib", default=os.path.join(SRC, "build", "libfusec.so"))
    ap.add_argument("--rounds", type=int, default=7)
    ap.add_argument("--reps", type=int, default=100000)
    a = ap.parse_args()
    lib = os.path.abspath(a.lib)
    os.environ["FUSEC_LIBRARY"] = lib
    tmp = tempfile.mkdtemp(prefix="fusec-pybench-")
    os.environ.setdefault("FUSEC_CACHE_DIR", os.path.join(tmp, "cache"))
    sys.path.insert(0, os.path.join(SRC, "python"))
    import numpy as np
    import fusec
    try:
        import torch
    except ImportError:
        torch = None
    exe = os.path.join(tmp, "launch_loop")
    build_c(lib, exe)
    print("device: %s\nlibrary: %s; numpy %s%s" % (machine(), lib, np.__version__,
                                                  "; torch " + torch.__version__ if torch else ""))
    for path, fn, dims, shapes in WORKLOADS:
        m = fusec.compile(os.path.join(SRC, path), target="cpu")
        rounds = {}
        for _ in range(a.rounds):
            c_launch, c_plan = c_times(exe, path, fn, dims, a.reps)
            py = python_times(fusec, np, m, fn, shapes, a.reps // 2, torch)
            for k, v in dict(py, c_launch=c_launch, c_plan=c_plan).items():
                rounds.setdefault(k, []).append(v)
        med = {k: statistics.median(v) for k, v in rounds.items()}
        where = {k: statistics.median(v) for k, v in _parts_rounds(
            fusec, np, m, fn, shapes, a.reps // 2, 3).items()}
        report(path, fn, dims, shapes, med, where)


def _parts_rounds(fusec, np, m, fn, shapes, reps, rounds):
    out = {}
    for _ in range(rounds):
        for k, v in parts(fusec, np, m, fn, shapes, reps).items():
            out.setdefault(k, []).append(v)
    return out


def report(path, fn, dims, shapes, med, where):
    n = len(shapes)
    print("\n%s (%s; %d input%s, numpy f32): ns per call, median of rounds"
          % (fn, ", ".join("%s=%d" % kv for kv in dims.items()), n, "" if n == 1 else "s"))
    rows = [("C fusec_launch", "c_launch"), ("Python m.%s(..., out=...)" % fn, "call_out"),
            ("Python m.%s(...) (makes results)" % fn, "call_alloc"),
            ("C fusec_plan_launch", "c_plan"), ("Python p()", "plan")]
    if "torch_out" in med:
        rows.append(("Python m.%s(..., out=...), torch tensors" % fn, "torch_out"))
    for label, k in rows:
        print("  %-48s %8.0f" % (label, med[k]))
    print("  overhead over C: out= %+.0f ns, making results %+.0f ns, plan %+.0f ns"
          % (med["call_out"] - med["c_launch"], med["call_alloc"] - med["c_launch"],
             med["plan"] - med["c_plan"]))
    print("  where it goes (each part timed alone):")
    for k, v in where.items():
        print("    %-24s %8.0f" % (k, v))
    print("JSON " + json.dumps({"function": fn, "dims": dims, "ns": med, "parts_ns": where}))


if __name__ == "__main__":
    main()
