#!/usr/bin/env python3
"""bench/run.py: `make bench`. How much faster is fused code, and how close to the
hardware's limit?

For each device present (the CPU always; a GPU when fusec finds one) it measures GELU and
bias+ReLU (f32, f16, bf16) over a range of sizes, softmax and layernorm over rows, each fused
and --no-fuse, against what a user would use instead (on the CPU: the formula as one OpenMP
loop in C built with gcc -O3 -march=native -ffast-math -fopenmp, and numpy; on a GPU:
PyTorch eager, its fused operators and torch.compile, from bench/torch_peers.py), and sets
every result against the device's copy bandwidth measured in the same run. Also compile
latency: cold, from the disk cache in a new process, and in process.

Writes a table to the terminal, bench/out/results.json, and PNG plots (bandwidth % against
size, one line per system) when matplotlib or gnuplot is available.
"""
import argparse
import datetime
import json
import os
import platform
import shutil
import statistics
import subprocess
import sys
import tempfile
import time

HERE = os.path.dirname(os.path.abspath(__file__))
ROOT = os.path.dirname(HERE)
PROGRAMS = os.path.join(HERE, "programs")


def sh(cmd, **kw):
    return subprocess.run(cmd, capture_output=True, text=True, **kw)


def fusec_bench(fusec, prog, fn, dims, target, reps, no_fuse=False):
    args = [fusec, "bench", os.path.join(PROGRAMS, prog), "-f", fn, "--reps", str(reps),
            "--format", "json", f"--target={target}"]
    for k, v in dims.items():
        args += ["--dim", f"{k}={v}"]
    if no_fuse:
        args.append("--no-fuse")
    p = sh(args, timeout=3600)
    if p.returncode != 0:
        print(f"  fusec bench {prog}:{fn} {dims} failed: {p.stderr.strip()}", file=sys.stderr)
        return None
    return json.loads(p.stdout)


def device_info(target):
    info = {"target": target, "date": datetime.datetime.now().isoformat(timespec="seconds")}
    info["commit"] = sh(["git", "-C", ROOT, "rev-parse", "--short", "HEAD"]).stdout.strip()
    dirty = sh(["git", "-C", ROOT, "status", "--porcelain", "--untracked-files=no"]).stdout
    if dirty.strip():
        info["commit"] += " (with uncommitted changes)"
    if target == "cuda":
        q = sh(["nvidia-smi", "--query-gpu=name,driver_version", "--format=csv,noheader"])
        if q.returncode == 0:
            name, driver = [s.strip() for s in q.stdout.splitlines()[0].split(",")]
            info.update(device=name, driver=driver)
        nvcc = sh(["/usr/local/cuda/bin/nvcc", "--version"])
        if nvcc.returncode == 0:
            info["toolkit"] = nvcc.stdout.strip().splitlines()[-1]
    else:
        model = platform.processor()
        try:
            with open("/proc/cpuinfo") as f:
                for line in f:
                    if line.startswith("model name"):
                        model = line.split(":", 1)[1].strip()
                        break
        except OSError:
            pass
        info.update(device=f"{model}, {os.cpu_count()} cores", driver="-", toolkit="-")
    return info


def anchor_binary(out):
    """Builds bench/anchor.c the way the issue says a user would."""
    exe = os.path.join(out, "anchor")
    srcs = [os.path.join(HERE, "anchor.c"), os.path.join(HERE, "gelu_anchor.c")]
    p = sh(["gcc", "-O3", "-march=native", "-ffast-math", "-fopenmp", *srcs, "-o", exe, "-lm"])
    if p.returncode != 0:
        print("  hand-written C anchor not built:", p.stderr.strip()[:200], file=sys.stderr)
        return None
    return exe


def anchor_run(exe, args, reps):
    p = sh([exe] + [str(a) for a in args] + [str(reps)], timeout=3600)
    return json.loads(p.stdout) if p.returncode == 0 else None


def numpy_time(kind, shape, dtype, reps):
    """numpy's time for the formula (element-wise numpy runs on one core)."""
    import numpy as np
    rng = np.random.default_rng(1)
    dt = {"f32": np.float32, "f16": np.float16}[dtype]
    if kind == "gelu":
        x = rng.uniform(-2, 2, shape).astype(dt)
        k = dt(0.7978845608028654)

        def f():
            return dt(0.5) * x * (dt(1.0) + np.tanh(k * (x + dt(0.044715) * x * x * x)))
    elif kind == "bias_relu":
        x = rng.uniform(-2, 2, shape).astype(dt)
        b = rng.uniform(-2, 2, shape[-1]).astype(dt)

        def f():
            return np.maximum(x + b, dt(0))
    elif kind == "softmax":
        x = rng.uniform(-2, 2, shape).astype(dt)

        def f():
            e = np.exp(x - x.max(axis=1, keepdims=True))
            return e / e.sum(axis=1, keepdims=True)
    else:
        x = rng.uniform(-2, 2, shape).astype(dt)
        w = rng.uniform(-2, 2, shape[-1]).astype(dt)
        b = rng.uniform(-2, 2, shape[-1]).astype(dt)

        def f():
            mu = x.mean(axis=1, keepdims=True)
            d = x - mu
            return d / np.sqrt((d * d).mean(axis=1, keepdims=True) + dt(1e-5)) * w + b
    f()
    ts = []
    for _ in range(reps):
        t = time.perf_counter()
        f()
        ts.append((time.perf_counter() - t) * 1e3)
    return statistics.median(ts)


def compile_latency(fusec, target, reps=10):
    """Cold (no cache), and from the disk cache in a new process, of examples/gelu.fuse."""
    src = os.path.join(ROOT, "examples", "gelu.fuse")
    cache = tempfile.mkdtemp(prefix="fusec-bench-cache-")
    env = dict(os.environ, FUSEC_CACHE_DIR=cache)

    def timed(args):
        ts = []
        for _ in range(reps):
            t = time.perf_counter()
            p = subprocess.run([fusec] + args, env=env, capture_output=True)
            ts.append((time.perf_counter() - t) * 1e3)
            if p.returncode != 0:
                return None
        return statistics.median(ts)

    extra = [f"--target={target}"] + (["--arch=sm_90"] if target == "cuda" else [])
    cold = timed(extra + ["--no-cache", src])
    subprocess.run([fusec] + extra + [src], env=env, capture_output=True)
    cached = timed(extra + [src])
    shutil.rmtree(cache, ignore_errors=True)
    return {"process_cold_ms": cold, "process_cached_ms": cached}


def workloads(quick, target):
    """(name, program, function, dims, elements, kind, dtype, numpy shape)."""
    if quick:
        sizes = [1 << 20]
    elif target == "ref":
        sizes = [1 << 16, 1 << 18, 1 << 20]  # the interpreter is the oracle, not fast
    else:
        sizes = [1 << s for s in range(16, 29, 2)]
    out = []
    for dt, suffix in (("f32", ""), ("f16", "_f16"), ("bf16", "_bf16")):
        for n in sizes:
            out.append(("gelu", "gelu.fuse", "gelu" + suffix, {"N": n}, n, "gelu", dt, (n,)))
        for n in sizes:
            b = max(n // 4096, 1)
            out.append(("bias_relu", "bias_relu.fuse", "bias_relu" + suffix,
                        {"B": b, "C": 4096}, b * 4096, "bias_relu", dt, (b, 4096)))
    rows_elems = (1 << 20) if quick or target == "ref" else (1 << 24)
    for c in (1024, 4096, 16384):
        r = max(rows_elems // c, 1)
        for fn in ("softmax", "layernorm"):
            out.append((fn, "rows.fuse", fn, {"R": r, "C": c}, r * c, fn, "f32", (r, c)))
    return out


def plot(results, out):
    """One PNG per workload and dtype: % of copy bandwidth against size, a line per system."""
    groups = {}
    for r in results:
        groups.setdefault((r["workload"], r["dtype"], r.get("cols")), []).append(r)
    made = []
    try:
        import matplotlib
        matplotlib.use("Agg")
        import matplotlib.pyplot as plt
    except ImportError:
        plt = None
    for (wl, dt, cols), rs in sorted(groups.items(), key=lambda kv: str(kv[0])):
        systems = sorted({r["system"] for r in rs})
        name = f"{wl}_{dt}" + (f"_C{cols}" if cols and wl in ("softmax", "layernorm") else "")
        path = os.path.join(out, name + ".png")
        if plt:
            fig, ax = plt.subplots(figsize=(7, 4.2))
            for s in systems:
                pts = sorted((r["elements"], r["pct_of_copy"]) for r in rs if r["system"] == s)
                ax.plot([p[0] for p in pts], [p[1] for p in pts], marker="o", label=s)
            ax.set_xscale("log", base=2)
            ax.set_xlabel("elements")
            ax.set_ylabel("% of copy bandwidth")
            ax.set_title(f"{wl} {dt}" + (f", C = {cols}" if name.endswith(f"C{cols}") else ""))
            ax.axhline(100, color="grey", lw=0.8, ls="--")
            ax.legend(fontsize=8)
            ax.grid(alpha=0.3)
            fig.tight_layout()
            fig.savefig(path, dpi=110)
            plt.close(fig)
            made.append(path)
        elif shutil.which("gnuplot"):
            data = os.path.join(out, name + ".dat")
            with open(data, "w") as f:
                for i, s in enumerate(systems):
                    f.write(f'"{s}"\n')
                    for e, p in sorted((r["elements"], r["pct_of_copy"]) for r in rs
                                       if r["system"] == s):
                        f.write(f"{e} {p}\n")
                    f.write("\n\n")
            lines = ", ".join(f"'{data}' index {i} with linespoints title '{s}'"
                              for i, s in enumerate(systems))
            script = (f"set terminal png size 800,480; set output '{path}'; set logscale x 2; "
                      f"set xlabel 'elements'; set ylabel '% of copy bandwidth'; "
                      f"set title '{wl} {dt}'; plot {lines}")
            if sh(["gnuplot", "-e", script]).returncode == 0:
                made.append(path)
    return made


def main():
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("--fusec", default=os.path.join(ROOT, "build", "fusec"))
    ap.add_argument("--out", default=os.path.join(HERE, "out"))
    ap.add_argument("--quick", action="store_true", help="one size each (for make demo)")
    ap.add_argument("--reps", type=int, default=10)
    ap.add_argument("--target", default=None, help="cpu, cuda or ref (default: every present)")
    a = ap.parse_args()
    os.makedirs(a.out, exist_ok=True)

    targets = [a.target] if a.target else []
    if not targets:
        for t in ("cuda", "cpu"):
            p = sh([a.fusec, f"--target={t}", os.path.join(ROOT, "examples", "gelu.fuse")])
            if p.returncode == 0:
                targets.append(t)
        if not targets:
            targets = ["ref"]
            print("no CUDA or CPU backend in this build: measuring the reference interpreter")

    anchor = anchor_binary(a.out)
    results, runs = [], []
    for target in targets:
        info = device_info(target)
        print(f"== {target}: {info.get('device', '?')}, commit {info['commit']}, {info['date']}")
        print(f"{'workload':<10} {'dtype':<5} {'shape':<16} {'system':<22} {'ms':>10} "
              f"{'GB/s':>8} {'% copy':>7}")
        for (wl, prog, fn, dims, n, kind, dt, shape) in workloads(a.quick, target):
            rows = []
            fused = fusec_bench(a.fusec, prog, fn, dims, target, a.reps)
            if not fused:
                continue
            copy_gbps = fused["copy_gbps"]
            rows.append(("fusec", fused["median_ms"], fused["bytes"]))
            unf = fusec_bench(a.fusec, prog, fn, dims, target, a.reps, no_fuse=True)
            if unf:
                rows.append(("fusec --no-fuse", unf["median_ms"], fused["bytes"]))
            if target != "cuda" and anchor and dt == "f32" and kind in ("gelu", "bias_relu"):
                args = [kind] + ([shape[0], shape[1]] if kind == "bias_relu" else [n])
                r = anchor_run(anchor, args, a.reps)
                if r:
                    rows.append(("C (gcc -O3 -fopenmp)", r["median_ms"], fused["bytes"]))
            if target != "cuda" and dt in ("f32", "f16"):
                try:
                    rows.append(("numpy", numpy_time(kind, shape, dt, max(3, a.reps // 3)),
                                 fused["bytes"]))
                except ImportError:
                    pass
            for system, ms, nbytes in rows:
                gbps = nbytes / (ms * 1e6)
                rec = {"target": target, "workload": wl, "function": fn, "dtype": dt,
                       "dims": dims, "elements": n, "cols": dims.get("C"), "system": system,
                       "median_ms": ms, "bytes": nbytes, "gbps": gbps,
                       "copy_gbps": copy_gbps, "pct_of_copy": 100.0 * gbps / copy_gbps}
                if system == "fusec":
                    rec["kernels"] = fused["kernels"]
                results.append(rec)
                print(f"{wl:<10} {dt:<5} {str(list(shape)):<16} {system:<22} {ms:>10.3f} "
                      f"{gbps:>8.2f} {rec['pct_of_copy']:>6.1f}%")
        lat = compile_latency(a.fusec, target)
        inproc = fusec_bench(a.fusec, "gelu.fuse", "gelu", {"N": 1024}, target, 3)
        if inproc:
            lat.update(inprocess_cold_ms=inproc["compile_cold_ms"],
                       inprocess_cached_ms=inproc["compile_cached_ms"])
        print(f"compile latency of examples/gelu.fuse on {target}: " +
              ", ".join(f"{k} {v:.2f}" for k, v in lat.items() if v is not None))
        runs.append({"device": info, "compile_latency": lat})

    with open(os.path.join(a.out, "results.json"), "w") as f:
        json.dump({"runs": runs, "results": results}, f, indent=1)
    made = plot(results, a.out)
    print(f"wrote {os.path.join(a.out, 'results.json')}" +
          (f" and {len(made)} plots" if made else " (no matplotlib or gnuplot: no plots)"))


if __name__ == "__main__":
    main()
