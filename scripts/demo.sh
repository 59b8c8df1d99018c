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
echo "== gelu on 1000003 random values: fusec run against numpy"
python3 - "$FUSEC" "$tmp" <<'PY'
import subprocess, sys, time
import numpy as np
fusec, tmp = sys.argv[1], sys.argv[2]
x = np.random.default_rng(1).uniform(-4, 4, 1000003).astype(np.float32)
np.save(f"{tmp}/x.npy", x)
for target in ("ref",):
    t = time.perf_counter()
    subprocess.run([fusec, "run", "examples/gelu.fuse", "-f", "gelu", f"--target={target}",
                    "--in", f"x={tmp}/x.npy", "--out", f"{tmp}/y.npy"], check=True)
    dt = time.perf_counter() - t
    y = np.load(f"{tmp}/y.npy")
    xd = x.astype(np.float64)
    ref = 0.5 * xd * (1 + np.tanh(np.sqrt(2 / np.pi) * (xd + 0.044715 * xd ** 3)))
    err = np.max(np.abs(y - ref) / (np.abs(ref) + 1e-6))
    print(f"  target {target:4s}: {dt * 1e3:8.1f} ms for the whole process, "
          f"max relative error {err:.2e} against numpy (float64)")
PY
