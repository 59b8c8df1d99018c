#!/usr/bin/env python3
"""bench/cpu_peers.py: fusec on the CPU against PyTorch on the CPU, side by side, interleaved.

For each workload (softmax and layernorm over short, medium and long rows, GELU and
bias+ReLU), each of --rounds rounds runs `fusec bench --target=cpu` (its median, and the copy
of the same bytes it measures in the same process) and then bench/torch_peers.py --device cpu
(eager op by op, PyTorch's fused operator, torch.compile, copy_) in a child process, so that
a machine whose load drifts shifts both sides alike; the table gives each system's median
over the rounds and fusec's speed-up over each peer. `--cpu LEVEL` passes --cpu to fusec
(x86-64-v3: the AVX2 code on an AVX-512 host); --threads sets both sides' thread count
(default: every core).

    python3 bench/cpu_peers.py --fusec build/fusec [--rounds 3] [--only softmax] [--json F]
        [--workload layernorm:f32:419430x10]...   (f32: the programs of bench/programs/)
"""
import argparse
import json
import os
import statistics
import subprocess
import sys
sys.dont_write_bytecode = True  # no __pycache__ in the source tree
from nocold import no_cold_flag  # noqa: E402  (bench/, this script's directory)

HERE = os.path.dirname(os.path.abspath(__file__))
PROGRAMS = os.path.join(HERE, "programs")

# (kind, dtype, shape): rows of 64 to 16384, and the element-wise pair at 2^26
WORKLOADS = [("softmax", "f32", [65536, 64]), ("softmax", "f32", [16384, 256]),
             ("softmax", "f32", [4096, 1024]), ("softmax", "f32", [4096, 4096]),
             ("softmax", "f32", [1024, 16384]), ("layernorm", "f32", [65536, 64]),
             ("layernorm", "f32", [16384, 256]), ("layernorm", "f32", [4096, 4096]),
             ("gelu", "f32", [1 << 26]), ("bias_relu", "f32", [16384, 4096])]
PROG = {"softmax": ("rows.fuse", "softmax", "RC"), "layernorm": ("rows.fuse", "layernorm", "RC"),
        "gelu": ("gelu.fuse", "gelu", "N"), "bias_relu": ("bias_relu.fuse", "bias_relu", "BC")}


def fusec_time(a, kind, dtype, shape):
    prog, fn, dims = PROG[kind]
    args = [a.fusec, "bench", os.path.join(PROGRAMS, prog), "-f", fn, "--target=cpu",
            "--reps", str(a.reps), "--format", "json", *no_cold_flag(a.fusec)]
    for d, n in zip(dims, shape):
        args += ["--dim", f"{d}={n}"]
    if a.cpu:
        args.append(f"--cpu={a.cpu}")
    env = dict(os.environ)
    if a.threads:
        env["FUSEC_NUM_THREADS"] = str(a.threads)
    p = subprocess.run(args, capture_output=True, text=True, env=env, timeout=600)
    if p.returncode != 0:
        sys.exit(f"fusec bench {kind} {shape}: {p.stderr.strip()}")
    r = json.loads(p.stdout)
    return r["median_ms"], r["copy_ms"]


def torch_times(a, wls):
    args = [sys.executable, os.path.join(HERE, "torch_peers.py"), "--device", "cpu", "--reps",
            str(a.reps), "-"]
    env = dict(os.environ)
    if a.threads:
        env["OMP_NUM_THREADS"] = str(a.threads)
    inp = json.dumps([{"kind": k, "dtype": d, "shape": s} for k, d, s in wls])
    p = subprocess.run(args, input=inp, capture_output=True, text=True, env=env, timeout=3600)
    if p.returncode != 0:
        sys.exit(f"bench/torch_peers.py: {p.stderr.strip()[-2000:]}")
    out = {}
    for r in json.loads(p.stdout)["results"]:
        out[(r["kind"], r["dtype"], tuple(r["shape"]), r["system"])] = r["median_ms"]
    return out


def parse_workload(text):
    """KIND:DTYPE:DIMS (DIMS as 419430x10) as a WORKLOADS entry."""
    try:
        kind, dtype, dims = text.split(":")
        shape = [int(d) for d in dims.split("x")]
    except ValueError:
        sys.exit(f"--workload {text!r}: want KIND:DTYPE:DIMS, e.g. layernorm:f32:419430x10")
    if dtype != "f32":
        sys.exit(f"--workload {text!r}: bench/programs/ are f32 programs")
    if kind not in PROG or len(shape) != len(PROG[kind][2]) or min(shape) < 1:
        sys.exit(f"--workload {text!r}: the kinds are {', '.join(PROG)}, with "
                 + ", ".join(f"{k}: {len(v[2])} dims" for k, v in PROG.items()))
    return (kind, dtype, shape)


def main():
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("--fusec", default="build/fusec")
    ap.add_argument("--rounds", type=int, default=3)
    ap.add_argument("--reps", type=int, default=20)
    ap.add_argument("--cpu", help="fusec's --cpu level (default: this host's)")
    ap.add_argument("--threads", type=int, help="threads on both sides (default: all cores)")
    ap.add_argument("--only", help="workloads of this kind only")
    ap.add_argument("--workload", action="append", metavar="KIND:DTYPE:DIMS",
                    help="this workload instead of the list, e.g. layernorm:f32:419430x10 "
                    "(repeatable)")
    ap.add_argument("--json", help="write every round's times here")
    a = ap.parse_args()
    wls = [parse_workload(w) for w in a.workload] if a.workload else WORKLOADS
    wls = [w for w in wls if not a.only or w[0] == a.only]
    times = {}  # (kind, dtype, shape, system): [ms per round]
    for rnd in range(a.rounds):
        for kind, dtype, shape in wls:
            ms, copy = fusec_time(a, kind, dtype, shape)
            times.setdefault((kind, dtype, tuple(shape), "fusec"), []).append(ms)
            times.setdefault((kind, dtype, tuple(shape), "copy"), []).append(copy)
        for key, ms in torch_times(a, wls).items():
            times.setdefault(key, []).append(ms)
        print(f"round {rnd + 1} of {a.rounds} done", file=sys.stderr)
    systems = ["fusec", "copy", "torch eager", "torch fused op", "torch.compile", "torch copy_"]
    print("| workload | " + " | ".join(systems) + " | fusec/copy | eager/fusec | fused op/fusec"
          " | compile/fusec |")
    print("|---" * (len(systems) + 5) + "|")
    for kind, dtype, shape in wls:
        k = (kind, dtype, tuple(shape))
        med = {s: statistics.median(times[k + (s,)]) if k + (s,) in times else None
               for s in systems}
        f = med["fusec"]

        def ratio(s):
            return f"{med[s] / f:.2f}x" if med[s] else ""
        cells = [f"{med[s]:.3f}" if med[s] else "" for s in systems]
        print(f"| {kind} {dtype} {shape} | " + " | ".join(cells) +
              f" | {f / med['copy']:.2f} | {ratio('torch eager')} | {ratio('torch fused op')} |"
              f" {ratio('torch.compile')} |")
    if a.json:
        with open(a.json, "w") as fp:
            json.dump({" ".join(map(str, k)): v for k, v in times.items()}, fp, indent=1)


main()
