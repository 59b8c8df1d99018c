#!/usr/bin/env bash
# tests/gpu/embed.sh EMBED: examples/embed.c on the GPU: it must pick CUDA and pass its checks.
set -eu
out=$("$1" "$FUSEC_SRC/examples/gelu.fuse")
echo "$out"
grep -q '^target: cuda$' <<<"$out" || { echo "FAIL: embed did not run on CUDA"; exit 1; }
