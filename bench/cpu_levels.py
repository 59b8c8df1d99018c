#!/usr/bin/env python3
"""bench/cpu_levels.py: the CPU goals at several CPU levels on one host. The same workloads
(GELU and bias+ReLU, f32 by default, at their largest CPU sizes) built by fusec for the host
(`native`) and for named levels (FUSEC_CPU: x86-64-v3 is what a host without AVX-512 gets),
run here, interleaved round by round so that the machine's changing memory bandwidth falls on
all of them alike; each run measures the copy of the same bytes in the same process, and the
table gives the median over rounds of time / copy time (the goal: at most 1.2).

    python3 bench/cpu_levels.py --fusec build/fusec [--rounds 5] [--cpus native,x86-64-v3]

Prints a markdown table with the host's CPU model, the vector width it has, the date and the
commit, for bench/RESULTS.md."""
import argparse
import datetime
import json
import os
import statistics
import subprocess
import sys
import tempfile
sys.dont_write_bytecode = True  # no __pycache__ in the source tree
from nocold import no_cold_flag  # noqa: E402  (bench/, this script's directory)

HERE = os.path.dirname(os.path.abspath(__file__))
ROOT = os.path.dirname(HERE)
WORKLOADS = [
    ("gelu f32 2^26", "gelu.fuse", "gelu", {"N": 1 << 26}),
    ("bias_relu f32 [16384, 4096]", "bias_relu.fuse", "bias_relu", {"B": 16384, "C": 4096}),
    ("gelu bf16 2^26", "gelu.fuse", "gelu_bf16", {"N": 1 << 26}),
    ("bias_relu bf16 [16384, 4096]", "bias_relu.fuse", "bias_relu_bf16", {"B": 16384, "C": 4096}),
]


def host():
    model, flags = "?", ""
    with open("/proc/cpuinfo") as f:
        for line in f:
            if line.startswith("model name") and model == "?":
                model = line.split(":", 1)[1].strip()
            if line.startswith("flags") and not flags:
                flags = " " + line.split(":", 1)[1] + " "
    width = "AVX-512" if " avx512f " in flags else "AVX2" if " avx2 " in flags else "SSE"
    commit = subprocess.run(["git", "-C", ROOT, "rev-parse", "--short", "HEAD"],
                            capture_output=True, text=True).stdout.strip()
    return model, width, commit


def one(fusec, cpu, prog, fn, dims, reps, cache):
    env = dict(os.environ, FUSEC_CACHE_DIR=cache)
    if cpu != "native":
        env["FUSEC_CPU"] = cpu
    args = [fusec, "bench", os.path.join(HERE, "programs", prog), "-f", fn, "--target=cpu",
            "--reps", str(reps), "--format", "json", *no_cold_flag(fusec)]
    for k, v in dims.items():
        args += ["--dim", f"{k}={v}"]
    p = subprocess.run(args, capture_output=True, text=True, env=env, timeout=600)
    if p.returncode != 0:
        print(f"{cpu} {fn}: {p.stderr.strip()}", file=sys.stderr)
        return None
    r = json.loads(p.stdout)
    return r["median_ms"], r["copy_ms"]


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--fusec", default=os.path.join(ROOT, "build", "fusec"))
    ap.add_argument("--rounds", type=int, default=5)
    ap.add_argument("--reps", type=int, default=20)
    ap.add_argument("--cpus", default="native,x86-64-v3")
    ap.add_argument("--only", help="workloads whose name holds this")
    a = ap.parse_args()
    cpus = a.cpus.split(",")
    work = [w for w in WORKLOADS if not a.only or a.only in w[0]]
    res = {(w[0], c): [] for w in work for c in cpus}
    with tempfile.TemporaryDirectory() as cache:
        for r in range(a.rounds):
            for name, prog, fn, dims in work:
                for cpu in (cpus if r % 2 == 0 else cpus[::-1]):
                    got = one(a.fusec, cpu, prog, fn, dims, a.reps, cache)
                    if got:
                        res[(name, cpu)].append(got)
            print(f"round {r + 1} of {a.rounds} done", file=sys.stderr)
    model, width, commit = host()
    print(f"- host: {model}, {os.cpu_count()} cores, {width}")
    print(f"- date: {datetime.date.today()}, commit {commit}, {a.rounds} interleaved rounds of "
          f"{a.reps} launches; each figure the median over rounds")
    print()
    print("| workload | " + " | ".join(f"{c}: ms, x copy" for c in cpus) + " | copy ms |")
    print("|---|" + "---|" * (len(cpus) + 1))
    for name, *_ in work:
        cells, copies = [], []
        for c in cpus:
            runs = res[(name, c)]
            if not runs:
                cells.append("-")
                continue
            ms = statistics.median(t for t, _ in runs)
            ratio = statistics.median(t / cp for t, cp in runs)
            copies += [cp for _, cp in runs]
            cells.append(f"{ms:.2f}, {ratio:.2f}x")
        copy = f"{statistics.median(copies):.2f}" if copies else "-"
        print(f"| {name} | " + " | ".join(cells) + f" | {copy} |")


if __name__ == "__main__":
    main()
