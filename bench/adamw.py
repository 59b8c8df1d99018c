#!/usr/bin/env python3
"""bench/adamw.py: one AdamW step (examples/adamw.fuse: one kernel, parameters and both moments
updated in place) against PyTorch's torch.optim.AdamW on the same tensors: fused=True (one
fused kernel of PyTorch's own), foreach=True (its default: a few multi-tensor kernels), and
foreach=False (op by op), with dst.copy_(src) over the same bytes as the limit; on the CPU,
or on CUDA device 0 with --target=cuda.

fusec is called from Python (the package, through DLPack on the PyTorch tensors, no copy):
a plan bound once with out=(p, m, v), its replays timed, the step count and the
hyper-parameters device scalars the plan reads at each replay. The step's bytes are what it
must move: p, g, m, v read and p, m, v written, 28 bytes an element in f32 (as `fusec bench`
and the .fuse file's expectation count them); every system is given that figure, so GB/s
compare times. Before timing, one step of each system from the same state is checked
against PyTorch's fused step (relative 1e-5).

Systems take turns within each round (this machine is shared and noisy), --rounds of them;
each figure is the median over rounds of a round's median of --reps steps.

    python3 bench/adamw.py [--target cpu|cuda] [--sizes 20,22,24] [--rounds 3] [--reps 20]

Needs PyTorch; the results go into bench/RESULTS.md by hand ("AdamW step")."""
import argparse
import json
import os
import platform
import statistics
import subprocess
import sys
import time

SRC = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
LR, BETAS, EPS, WD = 1e-3, (0.9, 0.999), 1e-8, 1e-2
BYTES_PER_ELEMENT = 28  # p, g, m, v read; p, m, v written; f32


def sync(torch, device):
    if device == "cuda":
        torch.cuda.synchronize()


def timed(torch, device, step, reps):
    """The median time of one call of step, in ms, after two warm-up calls."""
    for _ in range(2):
        step()
    sync(torch, device)
    times = []
    for _ in range(reps):
        t = time.perf_counter()
        step()
        sync(torch, device)
        times.append((time.perf_counter() - t) * 1e3)
    return statistics.median(times)


def state(torch, n, device, seed):
    """(parameters, gradient, first and second moments) of a step partway through training."""
    gen = torch.Generator().manual_seed(seed)
    p = torch.randn(n, generator=gen)
    g = torch.randn(n, generator=gen) * 0.1
    m = torch.randn(n, generator=gen) * 0.01
    v = torch.rand(n, generator=gen) * 1e-3
    return [t.to(device) for t in (p, g, m, v)]


class Torch:
    """torch.optim.AdamW over one parameter tensor, its moments set to the given state."""

    def __init__(self, torch, tensors, step, **flavour):
        p, g, m, v = (t.clone() for t in tensors)
        self.param = torch.nn.Parameter(p)
        self.param.grad = g
        self.opt = torch.optim.AdamW([self.param], lr=LR, betas=BETAS, eps=EPS, weight_decay=WD,
                                     **flavour)
        self.opt.state[self.param] = {
            "step": torch.tensor(float(step - 1), device=p.device if flavour.get("fused")
                                 else "cpu"),
            "exp_avg": m, "exp_avg_sq": v}

    def __call__(self):
        self.opt.step()

    def result(self):
        s = self.opt.state[self.param]
        return self.param.detach(), s["exp_avg"], s["exp_avg_sq"]


class Fusec:
    """examples/adamw.fuse through a plan, in place on (p, m, v); each replay one step."""

    def __init__(self, fusec, torch, module, tensors, step):
        self.p, self.g, self.m, self.v = (t.clone() for t in tensors)
        dev = self.p.device
        self.step = torch.tensor(float(step), device=dev)
        scal = [torch.tensor(x, device=dev) for x in (LR, BETAS[0], BETAS[1], EPS, WD)]
        args = [self.p, self.g, self.m, self.v] + scal + [self.step]
        self.plan = module.adamw.plan(*args, out=(self.p, self.m, self.v))

    def __call__(self):
        self.plan()
        self.step += 1  # a device scalar: the next replay reads it

    def result(self):
        return self.p, self.m, self.v


def check_step(torch, fusec_mod, fusec, n, device, failures):
    """One step of each system from the same state against PyTorch's fused step."""
    st = state(torch, 1001, device, 7)
    want = Torch(torch, st, 5, fused=True)
    want()
    systems = {"fusec": Fusec(fusec, torch, fusec_mod, st, 5),
               "torch foreach": Torch(torch, st, 5, foreach=True),
               "torch for-loop": Torch(torch, st, 5, foreach=False)}
    for name, s in systems.items():
        s()
        sync(torch, device)
        for got, w, what in zip(s.result(), want.result(), ("p", "m", "v")):
            if not torch.allclose(got, w, rtol=1e-5, atol=1e-7):
                err = (got - w).abs().max().item()
                failures.append(f"{name}: {what} differs from the fused step by {err:g}")


def cpu_model():
    try:
        with open("/proc/cpuinfo") as f:
            for line in f:
                if line.startswith("model name"):
                    return line.split(":", 1)[1].strip()
    except OSError:
        pass
    return platform.processor()


def main():
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("--target", default="cpu", choices=("cpu", "cuda"))
    ap.add_argument("--sizes", default="20,22,24", help="log2 of the element counts")
    ap.add_argument("--rounds", type=int, default=3)
    ap.add_argument("--reps", type=int, default=20)
    ap.add_argument("--lib", default=os.path.join(SRC, "build", "libfusec.so"))
    a = ap.parse_args()
    try:
        import torch
    except ImportError:
        print("PyTorch is not installed: nothing to compare with", file=sys.stderr)
        return 77
    os.environ.setdefault("FUSEC_LIBRARY", a.lib)
    sys.path.insert(0, os.path.join(SRC, "python"))
    import fusec
    device = a.target
    if device == "cuda" and not torch.cuda.is_available():
        print("no GPU for PyTorch here", file=sys.stderr)
        return 77
    mod = fusec.compile(os.path.join(SRC, "examples", "adamw.fuse"), target=a.target)
    failures = []
    check_step(torch, mod, fusec, 1001, device, failures)
    for f in failures:
        print("FAIL:", f, file=sys.stderr)
    commit = subprocess.run(["git", "-C", SRC, "rev-parse", "--short", "HEAD"],
                            capture_output=True, text=True).stdout.strip()
    info = {"device": torch.cuda.get_device_name(0) if device == "cuda" else cpu_model(),
            "threads": torch.get_num_threads(), "torch": torch.__version__,
            "commit": commit, "date": time.strftime("%Y-%m-%d")}
    print(json.dumps(info))
    names = ("fusec", "torch fused", "torch foreach", "torch for-loop", "torch copy_")
    print(f"{'N':>10} " + " ".join(f"{s:>16}" for s in names) + "   (ms a step; GB/s)")
    rows = []
    for k in (int(s) for s in a.sizes.split(",")):
        n = 1 << k
        st = state(torch, n, device, 1)
        src = torch.empty(n * BYTES_PER_ELEMENT // 8, device=device)  # reads + writes = bytes
        dst = torch.empty_like(src)
        runs = {"fusec": Fusec(fusec, torch, mod, st, 1),
                "torch fused": Torch(torch, st, 1, fused=True),
                "torch foreach": Torch(torch, st, 1, foreach=True),
                "torch for-loop": Torch(torch, st, 1, foreach=False),
                "torch copy_": lambda: dst.copy_(src)}
        times = {s: [] for s in names}
        for _ in range(a.rounds):
            for s in names:
                times[s].append(timed(torch, device, runs[s], a.reps))
        ms = {s: statistics.median(t) for s, t in times.items()}
        gbps = {s: n * BYTES_PER_ELEMENT / (ms[s] * 1e6) for s in names}
        rows.append({"n": n, "ms": ms, "gbps": gbps})
        print(f"{'2^%d' % k:>10} " + " ".join(f"{ms[s]:8.3f} {gbps[s]:6.1f}" for s in names))
    print(json.dumps(rows))
    return 1 if failures else 0


if __name__ == "__main__":
    sys.exit(main())
