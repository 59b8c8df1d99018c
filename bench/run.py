#!/usr/bin/env python3
"""bench/run.py: `make bench`. How much faster is fused code, and how close to the
hardware's limit?

For each device present (the CPU always; a GPU when fusec finds one) it measures GELU and
bias+ReLU (f32, f16, bf16) from 2^16 to 2^28 elements (the CPU to 2^26 unless
--cpu-max-log2 says otherwise), softmax and layernorm over rows of 1024, 4096 and 16384, and
a column sum (sum over axis 0) of 2^26 elements as 32, 512 and 4096 columns ([16384, 4096]:
the GPU issue's goal of 80% of the copy; 32 columns: the shape whose rows must be split to
fill a device), each fused and --no-fuse, against what a user would use instead: on the CPU
the formula as one OpenMP loop in C built with gcc -O3 -march=native -ffast-math -fopenmp,
and numpy; on a GPU PyTorch eager, its fused operators and torch.compile
(bench/torch_peers.py, run in a child process when PyTorch sees a GPU). Every result is set
against the device's copy bandwidth over the same bytes measured in the same run (the fastest
copy measured: fusec's, and on a GPU torch's copy_). Also compile latency: cold, from the disk
cache in a new process, and in process; and on a GPU the host time of launching a 20-kernel
--no-fuse program from a plan (a CUDA Graph) against launching it on a stream.

Writes a table to the terminal, bench/out/results.json, and PNG plots (% of copy bandwidth
against size, one line per system) when matplotlib or gnuplot is available. Its compiles go
to a temporary cache, removed at the end.
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
sys.dont_write_bytecode = True  # no __pycache__ in the source tree
from nocold import no_cold_flag  # noqa: E402  (bench/, this script's directory)

HERE = os.path.dirname(os.path.abspath(__file__))
ROOT = os.path.dirname(HERE)
PROGRAMS = os.path.join(HERE, "programs")


def sh(cmd, **kw):
    return subprocess.run(cmd, capture_output=True, text=True, **kw)


def fusec_bench(fusec, prog, fn, dims, target, reps, no_fuse=False, extra=(), cold=False):
    """One `fusec bench` as JSON; cold: with its cold compile timed (compile_cold_ms)."""
    args = [fusec, "bench", os.path.join(PROGRAMS, prog), "-f", fn, "--reps", str(reps),
            "--format", "json", f"--target={target}", *extra]
    if not cold:
        args += no_cold_flag(fusec)
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
        info.update(device="GPU", driver="?", toolkit="?")
        if shutil.which("nvidia-smi"):
            q = sh(["nvidia-smi", "--query-gpu=name,driver_version", "--format=csv,noheader"])
            if q.returncode == 0:
                name, driver = [s.strip() for s in q.stdout.splitlines()[0].split(",")]
                info.update(device=name, driver=driver)
        nvcc = shutil.which("nvcc") or "/usr/local/cuda/bin/nvcc"
        if os.path.exists(nvcc):
            info["toolkit"] = sh([nvcc, "--version"]).stdout.strip().splitlines()[-1]
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
    elif kind == "colsum":
        x = rng.uniform(-2, 2, shape).astype(dt)

        def f():
            return x.sum(axis=0, keepdims=True)
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


def workloads(quick, target, cpu_max_log2):
    """(name, program, function, dims, elements, kind, dtype, numpy shape)."""
    if quick:
        sizes = [1 << 20]
    elif target == "ref":
        sizes = [1 << 16, 1 << 18, 1 << 20]  # the interpreter is the oracle, not fast
    else:
        top = 28 if target == "cuda" else min(28, cpu_max_log2)
        sizes = [1 << s for s in range(16, top + 1, 2)]
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
    # column sums: the same elements as few long columns or many short ones; [16384, 4096] at
    # full size is the GPU issue's shape, and 32 columns give a device 32 columns' work unless
    # the rows are split
    cols_elems = (1 << 20) if quick or target == "ref" else (1 << 26)
    for c in (32, 512, 4096):
        r = cols_elems // c
        out.append(("colsum", "cols.fuse", "colsum", {"R": r, "C": c}, r * c, "colsum", "f32",
                    (r, c)))
    return out


def peer_workloads(wls):
    """The workloads as bench/torch_peers.py reads them."""
    return [{"kind": kind, "dtype": dt, "shape": list(shape)}
            for (_, _, _, _, _, kind, dt, shape) in wls]


def torch_on_gpu():
    """Whether PyTorch is installed and sees a GPU (asked in a child: this process stays
    free of a CUDA context while fusec runs)."""
    p = sh([sys.executable, "-c",
            "import sys, torch; sys.exit(0 if torch.cuda.is_available() else 1)"])
    return p.returncode == 0


def torch_peers(wls, reps, saved=None):
    """bench/torch_peers.py's results keyed by (kind, dtype, shape, system), and its run info:
    run now (its progress goes to the terminal), or read from its output saved before."""
    if saved:
        with open(saved) as f:
            out = json.load(f)
    else:
        p = subprocess.run([sys.executable, os.path.join(HERE, "torch_peers.py"), "--reps",
                            str(reps)], input=json.dumps(peer_workloads(wls)),
                           stdout=subprocess.PIPE, text=True, timeout=3600)
        if p.returncode != 0:
            print("  bench/torch_peers.py failed: no PyTorch peers in this run", file=sys.stderr)
            return {}, None
        out = json.loads(p.stdout)
    return {(r["kind"], r["dtype"], tuple(r["shape"]), r["system"]): r
            for r in out["results"]}, out["peers"]


def launch_overhead(fusec, target, reps):
    """Host time of one launch of programs/chain20.fuse --no-fuse (about 20 kernels) from a
    plan (a CUDA Graph) and from a stream, per launch and per kernel."""
    out = {}
    for mode in ("plan", "stream"):
        r = fusec_bench(fusec, "chain20.fuse", "chain20", {"N": 1 << 20}, target, reps,
                        no_fuse=True, extra=[f"--launch={mode}"])
        if not r or "host_us_per_launch" not in r:
            return {"skipped": "this fusec bench has no --launch=plan|stream reporting "
                               "host_us_per_launch"}
        out[mode] = {"kernels": r["kernels"], "median_ms": r["median_ms"],
                     "host_us_per_launch": r["host_us_per_launch"],
                     "host_us_per_kernel": r["host_us_per_launch"] / r["kernels"]}
    return out


def plot(results, devices, out):
    """One PNG per target, workload and dtype: % of copy bandwidth against size (elements for
    the element-wise workloads, the row length C for the row-wise ones, the columns C for the
    column sums, whose elements are the same at every C), a line per system."""
    groups = {}
    for r in results:
        groups.setdefault((r["target"], r["workload"], r["dtype"]), []).append(r)
    made = []
    try:
        import matplotlib
        matplotlib.use("Agg")
        import matplotlib.pyplot as plt
    except ImportError:
        plt = None
    for (target, wl, dt), rs in sorted(groups.items()):
        rows = wl in ("softmax", "layernorm", "colsum")
        xkey, xlabel = ("cols", "row length C") if rows else ("elements", "elements")
        if wl == "colsum":
            xlabel = "columns C ([R, C], R = elements / C)"
        systems = sorted({r["system"] for r in rs}, key=lambda s: (not s.startswith("fusec"), s))
        lines = {s: sorted((r[xkey], r["pct_of_copy"]) for r in rs if r["system"] == s)
                 for s in systems}
        title = f"{wl} {dt}" + (f", {rs[0]['elements']} elements" if rows else "") + \
            f" on {devices[target]}"
        path = os.path.join(out, f"{target}_{wl}_{dt}.png")
        if plt:
            fig, ax = plt.subplots(figsize=(7, 4.2))
            for s, pts in lines.items():
                ax.plot([p[0] for p in pts], [p[1] for p in pts], marker="o", label=s,
                        lw=2.2 if s == "fusec" else 1.2)
            ax.set_xscale("log", base=2)
            ax.set_xlabel(xlabel)
            ax.set_ylabel("% of copy bandwidth")
            ax.set_ylim(bottom=0)
            ax.set_title(title, fontsize=9)
            ax.axhline(100, color="grey", lw=0.8, ls="--")
            ax.legend(fontsize=8)
            ax.grid(alpha=0.3)
            fig.tight_layout()
            fig.savefig(path, dpi=90)
            plt.close(fig)
            made.append(path)
        elif shutil.which("gnuplot"):
            data = os.path.join(out, f"{target}_{wl}_{dt}.dat")
            with open(data, "w") as f:
                for s, pts in lines.items():
                    f.write(f'"{s}"\n' + "".join(f"{x} {p}\n" for x, p in pts) + "\n\n")
            plots = ", ".join(f"'{data}' index {i} with linespoints title '{s}'"
                              for i, s in enumerate(lines))
            script = (f"set terminal png size 630,380; set output '{path}'; set logscale x 2; "
                      f"set xlabel '{xlabel}'; set ylabel '% of copy bandwidth'; "
                      f"set yrange [0:*]; set title '{title}'; plot {plots}")
            if sh(["gnuplot", "-e", script]).returncode == 0:
                made.append(path)
    return made


def main():
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("--fusec", default=os.path.join(ROOT, "build", "fusec"))
    ap.add_argument("--out", default=os.path.join(HERE, "out"))
    ap.add_argument("--quick", action="store_true", help="one size each (for make demo)")
    ap.add_argument("--reps", type=int, default=10)
    ap.add_argument("--rounds", type=int, default=0,
                    help="turns each system takes at each workload, interleaved (default: 3 "
                    "on the CPU, 1 on a GPU and with --quick)")
    ap.add_argument("--target", default=None, help="cpu, cuda or ref (default: every present)")
    ap.add_argument("--cpu-max-log2", type=int, default=26, metavar="K",
                    help="the CPU's largest element-wise size, 2^K (default 26; up to 28)")
    ap.add_argument("--peers", metavar="FILE",
                    help="bench/torch_peers.py's output from an earlier run, instead of "
                    "running it now")
    ap.add_argument("--list-workloads", action="store_true",
                    help="print the workloads (of --target, default cuda) as "
                    "bench/torch_peers.py reads them, and stop")
    a = ap.parse_args()
    if a.list_workloads:
        wls = workloads(a.quick, a.target or "cuda", a.cpu_max_log2)
        print(json.dumps(peer_workloads(wls)))
        return

    targets = [a.target] if a.target else []
    if not targets:
        for t in ("cuda", "cpu"):
            p = sh([a.fusec, f"--target={t}", os.path.join(ROOT, "examples", "gelu.fuse")])
            if p.returncode == 0:
                targets.append(t)
        if not targets:
            targets = ["ref"]
            print("no CUDA or CPU backend in this build: measuring the reference interpreter")
    os.makedirs(a.out, exist_ok=True)
    with tempfile.TemporaryDirectory(prefix="fusec-bench-") as tmp:
        os.environ["FUSEC_CACHE_DIR"] = os.path.join(tmp, "cache")  # leaves no cache behind
        runs, results = measure(a, targets, anchor_binary(tmp))
    with open(os.path.join(a.out, "results.json"), "w") as f:
        json.dump({"runs": runs, "results": results}, f, indent=1)
    made = plot(results, {r["device"]["target"]: r["device"]["device"] for r in runs}, a.out)
    print(f"wrote {os.path.join(a.out, 'results.json')}" +
          (f" and {len(made)} plots" if made else " (no matplotlib or gnuplot: no plots)"))


def measure(a, targets, anchor):
    results, runs = [], []
    for target in targets:
        info = device_info(target)
        run = {"device": info, "load_average": [os.getloadavg()[0]]}
        wls = workloads(a.quick, target, a.cpu_max_log2)
        top = max(n for (wl, _, _, _, n, *_) in wls if wl == "gelu")
        if target == "cpu" and top < 1 << 28 and not a.quick:
            run["note"] = (f"element-wise sizes capped at 2^{top.bit_length() - 1} on the CPU "
                           "(--cpu-max-log2): at 2^28 f32 one --no-fuse GELU takes about 10 GB "
                           "and over a minute here")
        peers = {}
        if target == "cuda":
            if a.peers or torch_on_gpu():
                print("== PyTorch peers (bench/torch_peers.py)")
                peers, run["torch"] = torch_peers(wls, max(a.reps, 20), a.peers)
            else:
                run["torch"] = "not measured: PyTorch with CUDA is not installed"
        print(f"== {target}: {info.get('device', '?')}, commit {info['commit']}, {info['date']}")
        if "note" in run:
            print("  " + run["note"])
        print(f"{'workload':<10} {'dtype':<5} {'shape':<16} {'system':<22} {'ms':>10} "
              f"{'GB/s':>8} {'% copy':>7} {'copy GB/s':>9}")
        # a shared machine's memory bandwidth can change by 2x from one minute to the next
        # (bench/RESULTS.md): the contenders take turns, `rounds` times, so that each meets
        # the same conditions, and each reports its median over the rounds
        rounds = a.rounds if a.rounds else (1 if target == "cuda" or a.quick else 3)
        run["rounds"] = rounds
        for (wl, prog, fn, dims, n, kind, dt, shape) in wls:
            times, fused, unf = {}, None, None
            copies = {}
            for _ in range(rounds):
                f = fusec_bench(a.fusec, prog, fn, dims, target, a.reps)
                if not f:
                    break
                fused = f
                times.setdefault("fusec", []).append(f["median_ms"])
                copies["fusec"] = max(copies.get("fusec", 0), f["copy_gbps"])
                u = fusec_bench(a.fusec, prog, fn, dims, target, a.reps, no_fuse=True)
                if u:
                    unf = u
                    times.setdefault("fusec --no-fuse", []).append(u["median_ms"])
                    copies["fusec"] = max(copies["fusec"], u["copy_gbps"])
                if target != "cuda" and anchor and dt == "f32" and kind in ("gelu", "bias_relu"):
                    args = [kind] + ([shape[0], shape[1]] if kind == "bias_relu" else [n])
                    r = anchor_run(anchor, args, a.reps)
                    if r:
                        times.setdefault("C (gcc -O3 -fopenmp)", []).append(r["median_ms"])
                if target != "cuda" and dt in ("f32", "f16"):
                    try:
                        times.setdefault("numpy", []).append(
                            numpy_time(kind, shape, dt, max(3, a.reps // 3)))
                    except ImportError:
                        pass
            if not fused:
                continue
            nbytes = fused["bytes"]
            rows = [(system, statistics.median(ts)) for system, ts in times.items()]
            for system in ("torch eager", "torch fused op", "torch.compile", "torch copy_"):
                p = peers.get((kind, dt, tuple(shape), system))
                if not p:
                    continue
                if "error" in p:
                    print(f"  {system}: {p['error']}")
                elif system == "torch copy_":
                    copies["torch copy_"] = p["bytes"] / (p["median_ms"] * 1e6)
                else:
                    rows.append((system, p["median_ms"]))
            # the limit: the fastest copy of these bytes measured in this run
            copy_gbps = max(copies.values())
            for system, ms in rows:
                gbps = nbytes / (ms * 1e6)
                rec = {"target": target, "workload": wl, "function": fn, "dtype": dt,
                       "dims": dims, "elements": n, "cols": dims.get("C"), "system": system,
                       "median_ms": ms, "bytes": nbytes, "gbps": gbps, "copy_gbps": copy_gbps,
                       "copies_gbps": copies, "pct_of_copy": 100.0 * gbps / copy_gbps}
                if system == "fusec":
                    rec["kernels"] = fused["kernels"]
                elif system == "fusec --no-fuse":
                    rec["kernels"] = unf["kernels"]
                elif system.startswith("torch"):
                    p = peers[(kind, dt, tuple(shape), system)]
                    rec.update({k: p[k] for k in ("compile_s", "max_abs_diff_vs_eager")
                                if k in p})
                results.append(rec)
                print(f"{wl:<10} {dt:<5} {str(list(shape)):<16} {system:<22} {ms:>10.3f} "
                      f"{gbps:>8.2f} {rec['pct_of_copy']:>6.1f}% {copy_gbps:>9.1f}")
        lat = compile_latency(a.fusec, target)
        inproc = fusec_bench(a.fusec, os.path.join(ROOT, "examples", "gelu.fuse"), "gelu",
                             {"N": 1024}, target, 3, cold=True)
        if inproc:
            lat.update(inprocess_cold_ms=inproc["compile_cold_ms"],
                       inprocess_cached_ms=inproc["compile_cached_ms"])
        print(f"compile latency of examples/gelu.fuse on {target}: " +
              ", ".join(f"{k} {v:.2f}" for k, v in lat.items() if v is not None))
        run["compile_latency"] = lat
        if target == "cuda":
            run["launch_overhead"] = launch = launch_overhead(a.fusec, target, a.reps)
            if "skipped" in launch:
                print(f"launch overhead: skipped ({launch['skipped']})")
            else:
                print("launch overhead of programs/chain20.fuse --no-fuse: " + ", ".join(
                    f"{m} {v['host_us_per_launch']:.1f} us a launch of {v['kernels']} kernels "
                    f"({v['host_us_per_kernel']:.2f} us a kernel)" for m, v in launch.items()))
        run["load_average"].append(os.getloadavg()[0])
        print(f"load average (1 min) at the start and the end: {run['load_average'][0]:.2f}, "
              f"{run['load_average'][1]:.2f}")
        runs.append(run)
    return runs, results


if __name__ == "__main__":
    main()
