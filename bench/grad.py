#!/usr/bin/env python3
"""bench/grad.py: backward passes as `fn d = grad(f)` derives them (bench/programs/grad.fuse:
GELU, softmax, layernorm), fused against `--no-fuse`, and against PyTorch's backward of the
same forward (autograd, eager) and torch.compile's, on the CPU (--target=cpu) or a GPU
(--target=cuda, where PyTorch sees one).

fusec's times are `fusec bench` medians (the device's copy bandwidth measured alongside); the
bytes are what fusec's backward must move (its report: dgelu reads x and dy and writes dx,
12 bytes an element). PyTorch's backward is timed as torch.autograd.grad(y, inputs, dy,
retain_graph=True) on a forward recorded once (eager), or on torch.compile's forward (its
AOT-compiled backward), the median of --reps calls after warm-up; each is credited with
fusec's bytes, so GB/s compare times. Before timing, PyTorch's gradients are checked against
fusec's (`fusec run` of the same inputs): fusec's may be no more than twice as far from the
float64 gradients (PyTorch's, eager) as PyTorch's, plus 1e-6 of the largest (at R = 16384,
PyTorch's dw is 15x further off than fusec's). Systems take turns in each of --rounds rounds;
the figure is the median over rounds.

    python3 bench/grad.py [--target cpu|cuda] [--rounds 3] [--reps 20] [--quick]

The results go into bench/RESULTS.md by hand ("Gradients")."""
import argparse
import json
import os
import statistics
import subprocess
import sys
import tempfile
import time
sys.dont_write_bytecode = True  # no __pycache__ in the source tree
from nocold import no_cold_flag  # noqa: E402  (bench/, this script's directory)

SRC = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
PROG = os.path.join(SRC, "bench", "programs", "grad.fuse")


def fusec_bench(fusec, fn, dims, target, reps, no_fuse):
    args = [fusec, "bench", PROG, "-f", fn, f"--target={target}", "--reps", str(reps),
            "--format", "json", *no_cold_flag(fusec)] + (["--no-fuse"] if no_fuse else [])
    for k, v in dims.items():
        args += ["--dim", f"{k}={v}"]
    p = subprocess.run(args, capture_output=True, text=True)
    if p.returncode != 0:
        print(p.stderr, file=sys.stderr)
        return None
    return json.loads(p.stdout)


def workloads(quick):
    n = 1 << (20 if quick else 24)
    rows = (1 << 20 if quick else 1 << 24)
    out = [("dgelu", "gelu", {"N": n})]
    for c in (1024, 4096):
        out.append(("dsoftmax", "softmax", {"R": rows // c, "C": c}))
        out.append(("dlayernorm", "layernorm", {"R": rows // c, "C": c}))
    return out


def torch_forward(torch, fname):
    """PyTorch's forward of bench/programs/grad.fuse's function `fname`."""
    F = torch.nn.functional

    def gelu(x):
        return 0.5 * x * (1.0 + torch.tanh(0.7978845608028654 * (x + 0.044715 * x * x * x)))

    return {"gelu": gelu, "softmax": lambda x: torch.softmax(x, 1),
            "layernorm": lambda x, w, b: F.layer_norm(x, (x.shape[1],), w, b, 1e-5)}[fname]


def torch_setup(torch, fname, dims, device, compiled):
    """(step, check): step() runs the backward once; the gradients of the last step."""
    gen = torch.Generator().manual_seed(1)
    if fname == "gelu":
        shapes = {"x": (dims["N"],)}
    else:
        shapes = {"x": (dims["R"], dims["C"]), "w": (dims["C"],), "b": (dims["C"],)}
    names = ["x"] if fname != "layernorm" else ["x", "w", "b"]
    ts = {n: torch.randn(shapes[n], generator=gen).to(device).requires_grad_(True)
          for n in names}
    fwd = torch_forward(torch, fname)
    if compiled:
        fwd = torch.compile(fwd, dynamic=False, fullgraph=True)
    y = fwd(*[ts[n] for n in names])
    dy = torch.randn(y.shape, generator=gen).to(device)
    inputs = [ts[n] for n in names]
    last = {}

    def step():
        last["g"] = torch.autograd.grad(y, inputs, dy, retain_graph=True)

    return step, last, ts, dy, names


def check(torch, fusec, fname, dname, dims, ts, dy, names, grads, target):
    """PyTorch's gradients against fusec's on the same inputs."""
    import numpy as np
    with tempfile.TemporaryDirectory() as d:
        args = [fusec, "run", PROG, "-f", dname, f"--target={target}"]
        for n in names:
            p = os.path.join(d, n + ".npy")
            np.save(p, ts[n].detach().cpu().numpy())
            args += ["--in", f"{n}={p}"]
        p = os.path.join(d, "dy.npy")
        np.save(p, dy.cpu().numpy())
        args += ["--in", f"dy={p}"]
        outs = [os.path.join(d, f"o{i}.npy") for i in range(len(names))]
        for o in outs:
            args += ["--out", o]
        subprocess.run(args, check=True)
        # the exact gradients, by PyTorch's eager autograd in float64 on the same inputs: a
        # sum over 16384 rows in f32 is off by ~1e-5 of its largest on either side
        exact = torch_exact(torch, fname, ts, dy, names)
        for n, o, g, e in zip(names, outs, grads, exact):
            got, want = np.load(o).astype(np.float64), g.detach().cpu().double().numpy()
            scale = np.abs(e).max()
            err_f, err_t = np.abs(got - e).max() / scale, np.abs(want - e).max() / scale
            if err_f > 2 * err_t + 1e-6:
                return "d%s: error against float64 %.2g (fusec), %.2g (torch) of the largest" % (
                    n, err_f, err_t)
    return None


def torch_exact(torch, fname, ts, dy, names):
    """The gradients in float64 (eager PyTorch), as numpy arrays."""
    xs = [ts[n].detach().cpu().double().requires_grad_(True) for n in names]
    y = torch_forward(torch, fname)(*xs)
    return [g.numpy() for g in torch.autograd.grad(y, xs, dy.cpu().double())]


def main():
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("--target", default="cpu", choices=("cpu", "cuda"))
    ap.add_argument("--rounds", type=int, default=3)
    ap.add_argument("--reps", type=int, default=20)
    ap.add_argument("--quick", action="store_true")
    ap.add_argument("--fusec", default=os.path.join(SRC, "build", "fusec"))
    a = ap.parse_args()
    try:
        import torch
    except ImportError:
        torch = None
        print("PyTorch is not installed: fusec fused against --no-fuse only", file=sys.stderr)
    device = a.target
    commit = subprocess.run(["git", "-C", SRC, "rev-parse", "--short", "HEAD"],
                            capture_output=True, text=True).stdout.strip()
    print(json.dumps({"target": a.target, "commit": commit, "date": time.strftime("%Y-%m-%d"),
                      "torch": torch.__version__ if torch else None}))
    systems = ["fusec", "fusec --no-fuse"] + (["torch eager", "torch.compile"] if torch else [])
    print("%-11s %-22s " % ("backward", "dims") + " ".join("%16s" % s for s in systems)
          + "   (ms; GB/s on fusec's bytes)  copy GB/s")
    for dname, fname, dims in workloads(a.quick):
        runs = {}
        if torch:
            for s, compiled in (("torch eager", False), ("torch.compile", True)):
                step, last, ts, dy, names = torch_setup(torch, fname, dims, device, compiled)
                step()
                why = check(torch, a.fusec, fname, dname, dims, ts, dy, names, last["g"],
                            a.target)
                if why:
                    print("FAIL: %s %s: %s" % (s, dname, why), file=sys.stderr)
                runs[s] = step
        times = {s: [] for s in systems}
        nbytes, copy = None, 0.0
        for _ in range(a.rounds):
            for s in systems:
                if s.startswith("fusec"):
                    r = fusec_bench(a.fusec, dname, dims, a.target, a.reps,
                                    s == "fusec --no-fuse")
                    if r:
                        times[s].append(r["median_ms"])
                        copy = max(copy, r["copy_gbps"])
                        if s == "fusec":
                            nbytes = r["bytes"]
                    continue
                for _ in range(2):
                    runs[s]()
                ts = []
                for _ in range(a.reps):
                    if device == "cuda":
                        torch.cuda.synchronize()
                    t = time.perf_counter()
                    runs[s]()
                    if device == "cuda":
                        torch.cuda.synchronize()
                    ts.append((time.perf_counter() - t) * 1e3)
                times[s].append(statistics.median(ts))
        ms = {s: statistics.median(t) for s, t in times.items() if t}
        cells = " ".join("%8.3f %7.1f" % (ms[s], nbytes / ms[s] / 1e6) if s in ms else "%16s" % "-"
                         for s in systems)
        print("%-11s %-22s %s   %.1f" % (dname, ",".join("%s=%d" % kv for kv in dims.items()),
                                         cells, copy))
    return 0


if __name__ == "__main__":
    sys.exit(main())
