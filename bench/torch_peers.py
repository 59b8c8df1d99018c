#!/usr/bin/env python3
"""bench/torch_peers.py: PyTorch's times for bench/run.py's workloads, on the GPU.

Reads the workloads as JSON, a list of {"kind": gelu|bias_relu|softmax|layernorm|colsum,
"dtype": f32|f16|bf16, "shape": [...]} (bench/run.py --list-workloads writes it), from a file
or standard input, and times each of these on the device (CUDA events: warm-up, then the
median of --reps launches, each between two events; torch.cuda.synchronize before reading):

  torch eager      the formula of bench/programs/*.fuse written op by op
  torch fused op   F.gelu(approximate='tanh'), torch.softmax, F.layer_norm (bias+ReLU has no
                   fused operator in PyTorch: F.relu(x + b) is its eager form, so none here;
                   nor the column sum, whose eager form x.sum(dim=0, keepdim=True) is one
                   operator already)
  torch.compile    the op-by-op formula, mode default, dynamic=False, fullgraph=True; the
                   first call (the compile) is timed apart as compile_s, not in median_ms
  torch copy_      dst.copy_(src) over the bytes the workload moves: the device's copy limit

Bytes moved count each input read once and each output written once, as `fusec bench` does
(the column sum: R*C elements read, C written). Each system's result is checked against
eager's (max_abs_diff_vs_eager).
Prints one JSON object to standard output, progress to standard error. Inductor's and
Triton's caches go to a temporary directory that is removed at the end, so every compile is
cold. --dry-run checks the workloads and prints what would be timed, without PyTorch.
"""
import argparse
import json
import os
import shutil
import statistics
import sys
import tempfile
import time

KINDS = ("gelu", "bias_relu", "softmax", "layernorm", "colsum")
ITEMSIZE = {"f32": 4, "f16": 2, "bf16": 2}
GELU_K = 0.7978845608028654  # sqrt(2 / pi)
LN_EPS = 1e-5


def check_workload(w):
    """The workload as (kind, dtype, shape), or ValueError saying what is wrong with it."""
    kind, dtype, shape = w.get("kind"), w.get("dtype"), w.get("shape")
    if kind not in KINDS:
        raise ValueError(f"kind {kind!r} is not one of {', '.join(KINDS)}")
    if dtype not in ITEMSIZE:
        raise ValueError(f"dtype {dtype!r} is not one of {', '.join(ITEMSIZE)}")
    rank = 1 if kind == "gelu" else 2
    if (not isinstance(shape, list) or len(shape) != rank
            or not all(isinstance(d, int) and d > 0 for d in shape)):
        raise ValueError(f"{kind} needs a shape of {rank} positive sizes, got {shape!r}")
    return kind, dtype, tuple(shape)


def moved_bytes(kind, dtype, shape):
    """Each input read once and each output written once: x and y, plus the [C] vectors (the
    column sum's y is one [1, C] row)."""
    n = 1
    for d in shape:
        n *= d
    if kind == "colsum":
        return (n + shape[-1]) * ITEMSIZE[dtype]
    vectors = {"bias_relu": 1, "layernorm": 2}.get(kind, 0)
    return (2 * n + vectors * shape[-1]) * ITEMSIZE[dtype]


def systems(kind):
    fused = kind not in ("bias_relu", "colsum")  # no fused operator beyond the eager form
    return ["torch eager"] + (["torch fused op"] if fused else []) + \
        ["torch.compile", "torch copy_"]


def formulas(torch, kind):
    """(eager, fused op or None): functions of the inputs."""
    F = torch.nn.functional
    if kind == "gelu":
        def eager(x):
            return 0.5 * x * (1.0 + torch.tanh(GELU_K * (x + 0.044715 * x * x * x)))
        return eager, lambda x: F.gelu(x, approximate="tanh")
    if kind == "bias_relu":
        return (lambda x, b: torch.relu(x + b)), None
    if kind == "colsum":
        return (lambda x: x.sum(dim=0, keepdim=True)), None
    if kind == "softmax":
        def eager(x):
            e = torch.exp(x - x.amax(dim=1, keepdim=True))
            return e / e.sum(dim=1, keepdim=True)
        return eager, lambda x: torch.softmax(x, dim=1)

    def eager(x, w, b):
        mu = x.mean(dim=1, keepdim=True)
        d = x - mu
        return d * torch.rsqrt((d * d).mean(dim=1, keepdim=True) + LN_EPS) * w + b
    return eager, lambda x, w, b: F.layer_norm(x, (x.shape[-1],), w, b, eps=LN_EPS)


def inputs(torch, kind, dtype, shape, device):
    """Uniform in [-2, 2), drawn in f32 and rounded to the dtype, like `fusec bench`'s."""
    dt = {"f32": torch.float32, "f16": torch.float16, "bf16": torch.bfloat16}[dtype]
    gen = torch.Generator(device=device).manual_seed(1)

    def draw(*s):
        return (torch.rand(*s, device=device, generator=gen) * 4.0 - 2.0).to(dt)
    extra = {"bias_relu": 1, "layernorm": 2}.get(kind, 0)
    return [draw(*shape)] + [draw(shape[-1]) for _ in range(extra)]


def median_ms(torch, device, fn, reps, warmup):
    for _ in range(warmup):
        fn()
    if device != "cuda":
        ts = []
        for _ in range(reps):
            t = time.perf_counter()
            fn()
            ts.append((time.perf_counter() - t) * 1e3)
        return statistics.median(ts)
    torch.cuda.synchronize()
    events = [(torch.cuda.Event(enable_timing=True), torch.cuda.Event(enable_timing=True))
              for _ in range(reps)]
    for start, end in events:
        start.record()
        fn()
        end.record()
    torch.cuda.synchronize()
    return statistics.median(start.elapsed_time(end) for start, end in events)


def max_abs_diff(a, b):
    return (a.float() - b.float()).abs().max().item()


def sync(torch, device):
    if device == "cuda":
        torch.cuda.synchronize()


def first_line(e):
    return f"{type(e).__name__}: {e}".splitlines()[0]


def workload(torch, device, kind, dtype, shape, reps, warmup, compile_on):
    """This workload's results, and whether torch.compile is still to be tried."""
    base = {"kind": kind, "dtype": dtype, "shape": list(shape),
            "bytes": moved_bytes(kind, dtype, shape)}
    results = []

    def record(system, **fields):
        results.append(dict(base, system=system, **fields))
        shown = ", ".join(f"{k} {v:.4g}" if isinstance(v, float) else f"{k} {v}"
                          for k, v in fields.items())
        print(f"  {kind} {dtype} {list(shape)} {system}: {shown}", file=sys.stderr)

    def timed(system, fn, args, want, **fields):
        try:
            got = fn(*args)
            record(system, median_ms=median_ms(torch, device, lambda: fn(*args), reps, warmup),
                   max_abs_diff_vs_eager=max_abs_diff(got, want), **fields)
        except RuntimeError as e:  # out of memory is one
            record(system, error=first_line(e))

    try:
        args = inputs(torch, kind, dtype, shape, device)
        eager, fused = formulas(torch, kind)
        want = eager(*args)
    except RuntimeError as e:
        for system in systems(kind):
            record(system, error=first_line(e))
        return results, compile_on
    timed("torch eager", eager, args, want)
    if fused:
        timed("torch fused op", fused, args, want)
    if compile_on:
        try:
            torch.compiler.reset()  # a fresh compile for each shape: no recompile limit
            compiled = torch.compile(eager, dynamic=False, fullgraph=True)
            sync(torch, device)
            t = time.perf_counter()
            compiled(*args)
            sync(torch, device)
            timed("torch.compile", compiled, args, want, compile_s=time.perf_counter() - t)
        except Exception as e:  # Dynamo and Inductor raise many kinds; one is enough
            record("torch.compile", error=first_line(e))
            print("torch_peers: torch.compile failed; not trying it again in this run",
                  file=sys.stderr)
            compile_on = False
    args = want = None  # free the inputs before the copy takes its buffers
    try:
        src = torch.empty(base["bytes"] // 2, dtype=torch.uint8, device=device).fill_(1)
        dst = torch.empty_like(src)
        record("torch copy_", median_ms=median_ms(torch, device, lambda: dst.copy_(src), reps,
                                                  warmup))
    except RuntimeError as e:
        record("torch copy_", error=first_line(e))
    return results, compile_on


def run(workloads, device, reps, warmup, compile_on):
    import torch
    if device == "cuda" and not torch.cuda.is_available():
        sys.exit("torch_peers: torch.cuda.is_available() is false")
    info = {"torch": torch.__version__, "cuda": torch.version.cuda, "device_kind": device,
            "device": torch.cuda.get_device_name() if device == "cuda" else "cpu",
            "reps": reps, "warmup": warmup, "compile": compile_on}
    results = []
    for kind, dtype, shape in workloads:
        rs, compile_on = workload(torch, device, kind, dtype, shape, reps, warmup, compile_on)
        results += rs
        if device == "cuda":
            torch.cuda.empty_cache()
    return {"peers": info, "results": results}


def main():
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("workloads", nargs="?", default="-",
                    help="JSON file of workloads, - for standard input (the default)")
    ap.add_argument("--reps", type=int, default=20)
    ap.add_argument("--warmup", type=int, default=3)
    ap.add_argument("--device", default="cuda", help="cuda (default), or cpu to try it out")
    ap.add_argument("--no-compile", action="store_true", help="leave torch.compile out")
    ap.add_argument("--dry-run", action="store_true",
                    help="check the workloads and print what would be timed; no PyTorch")
    a = ap.parse_args()
    if a.reps < 1 or a.warmup < 0:
        ap.error("--reps needs at least 1 and --warmup at least 0")
    if a.workloads == "-":
        raw = json.load(sys.stdin)
    else:
        with open(a.workloads) as f:
            raw = json.load(f)
    if not isinstance(raw, list) or not raw:
        ap.error("the workloads are a non-empty JSON list")
    try:
        workloads = [check_workload(w) for w in raw]
    except (AttributeError, ValueError) as e:
        ap.error(f"bad workload: {e}")
    if a.dry_run:
        for kind, dtype, shape in workloads:
            names = [s for s in systems(kind) if s != "torch.compile" or not a.no_compile]
            print(f"{kind:<10} {dtype:<5} {str(list(shape)):<18} "
                  f"{moved_bytes(kind, dtype, shape):>12} bytes  {', '.join(names)}")
        return
    cache = tempfile.mkdtemp(prefix="torch-peers-")
    os.environ["TORCHINDUCTOR_CACHE_DIR"] = os.path.join(cache, "inductor")
    os.environ["TRITON_CACHE_DIR"] = os.path.join(cache, "triton")
    try:
        out = run(workloads, a.device, a.reps, a.warmup, not a.no_compile)
    finally:
        shutil.rmtree(cache, ignore_errors=True)
    json.dump(out, sys.stdout, indent=1)
    print()


if __name__ == "__main__":
    main()
