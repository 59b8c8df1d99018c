#!/usr/bin/env bash
# scripts/demo.sh: `make demo`. Compiles every example, shows what fusion did (kernels and
# bytes, fused against --no-fuse), and runs GELU end to end against numpy.
set -eu
BUILD=${1:-build}
FUSEC="$BUILD/fusec"
export FUSEC_CACHE_DIR="${FUSEC_CACHE_DIR:-$BUILD/demo-cache}"
tmp=$(mktemp -d)
trap 'rm -rf "$tmp"' EXIT

echo "== fusec $("$FUSEC" --version | cut -d' ' -f2): kernels per function, fused against unfused"
printf '%-28s %8s %8s\n' "example" "fused" "no-fuse"
for f in examples/*.fuse; do
    fused=$("$FUSEC" --emit=ir "$f" | grep -c '^kernel ' || true)
    unfused=$("$FUSEC" --no-fuse --emit=ir "$f" | grep -c '^kernel ' || true)
    printf '%-28s %8s %8s\n' "$(basename "$f")" "$fused" "$unfused"
done

echo
echo "== the fusion report of gelu.fuse (fusec -v)"
"$FUSEC" -v examples/gelu.fuse 2>&1 | sed 's/^/  /'

echo
target=$("$FUSEC" -v examples/gelu.fuse 2>&1 | sed -n 's/^target: //p' | cut -d' ' -f1)
target=${target:-ref}
n=$((1 << 24)); [ "$target" = ref ] && n=$((1 << 18))
echo "== fused against unfused on the $target target (fusec bench, median of 10 runs)"
for mode in "" --no-fuse; do
    "$FUSEC" bench examples/gelu.fuse -f gelu --dim N=$n --reps 10 $mode
    "$FUSEC" bench examples/softmax.fuse -f softmax --dim R=$((n / 1024)) --dim C=1024 --reps 10 $mode
done | grep -E '^examples|time|of copy|kernels'

echo
echo "== gelu on 1000003 random values: fusec run against numpy"
python3 - "$FUSEC" "$tmp" "$target" <<'PY'
import subprocess, sys, time
import numpy as np
fusec, tmp, target = sys.argv[1], sys.argv[2], sys.argv[3]
x = np.random.default_rng(1).uniform(-4, 4, 1000003).astype(np.float32)
np.save(f"{tmp}/x.npy", x)
for t in sorted({target, "ref"}):
    start = time.perf_counter()
    subprocess.run([fusec, "run", "examples/gelu.fuse", "-f", "gelu", f"--target={t}",
                    "--in", f"x={tmp}/x.npy", "--out", f"{tmp}/y.npy"], check=True)
    dt = time.perf_counter() - start
    y = np.load(f"{tmp}/y.npy")
    xd = x.astype(np.float64)
    ref = 0.5 * xd * (1 + np.tanh(np.sqrt(2 / np.pi) * (xd + 0.044715 * xd ** 3)))
    # the SPEC's f32 tolerance: |got - ref| <= 1e-5 |ref| + 1e-6
    worst = np.max(np.abs(y - ref) / (1e-5 * np.abs(ref) + 1e-6))
    print(f"  target {t:4s}: {dt * 1e3:8.1f} ms for the whole process; worst error "
          f"{worst:.3f} of the SPEC's tolerance against numpy (float64)")
PY
