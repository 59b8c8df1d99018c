#!/usr/bin/env bash
# tests/cli/cuda_build.sh: the cuda backend without a GPU: --emit=cuda|ptx|cubin, PTX that
# ptxas assembles, byte-identical source from separate processes, building for an explicit
# architecture, the error without one, and the kernel cache
# seen from -v: a hit in a new
# process, corrupt entries rebuilt, 8 processes building at once (NVRTC runs once), an
# unwritable directory (one warning, the build still succeeds), and a miss for each key part
# that changes. Exits 77 (skipped) when NVRTC is not installed.
set -u
: "${FUSEC:?}" "${FUSEC_SRC:?}"
# shellcheck source=tests/lib.sh
source "$FUSEC_SRC/tests/lib.sh"
export FUSEC_CACHE_DIR="$tmp/cache"
ex="$FUSEC_SRC/examples"
cu=(--target=cuda --arch=sm_90)

if ! "$FUSEC" "${cu[@]}" --emit=ptx --no-cache "$ex/gelu.fuse" -o "$tmp/probe.ptx" 2>"$tmp/err"; then
    if grep -q "NVRTC" "$tmp/err"; then
        echo "cuda_build: skipped: $(cat "$tmp/err")"
        exit 77
    fi
fi

# ---- the math: the CPU's functions, CUDA's only with --fast-math ------------------------------
# NVRTC 13 defines __USE_FAST_MATH__ (as 0) without fast math too: a module that asked whether it
# was defined ran CUDA's own expf (ex2.approx) where the CPU's bits are the contract (issue 30)
cat >"$tmp/math.fuse" <<'EOF2'
fn m(x: f32[N]) -> f32[N] { return exp(x) + log(x) + sin(x) + tanh(x); }
EOF2
"$FUSEC" "${cu[@]}" --emit=ptx "$tmp/math.fuse" -o "$tmp/math.ptx"
check "precise math: no approximate instruction in the PTX" \
    bash -c "! grep -qE '(ex2|lg2|sin|cos|tanh|rcp)\.approx' '$tmp/math.ptx'"
"$FUSEC" "${cu[@]}" --emit=ptx --fast-math "$tmp/math.fuse" -o "$tmp/math-fast.ptx"
check "--fast-math: CUDA's approximate instructions" grep -qE 'ex2\.approx' "$tmp/math-fast.ptx"

# ---- emitting ------------------------------------------------------------------------------
"$FUSEC" --target=cuda --emit=cuda "$ex/softmax.fuse" -o "$tmp/a.cu"
check "emit cuda exits 0" test $? -eq 0
"$FUSEC" --target=cuda --emit=cuda "$ex/softmax.fuse" >"$tmp/b.cu"
check "two processes emit byte-identical CUDA" cmp -s "$tmp/a.cu" "$tmp/b.cu"
check "the source names its kernels" grep -q 'extern "C" __global__ .* fusec_softmax_k0(' "$tmp/a.cu"
check "the source needs no header" bash -c "! grep -q '#include' '$tmp/a.cu'"

ptxas=/usr/local/cuda/bin/ptxas
command -v ptxas >/dev/null 2>&1 && ptxas=$(command -v ptxas)
# (under the sanitizers, FUSEC_CPU_TEST_QUICK: fused only; the plain pass builds --no-fuse's)
modes=("" --no-fuse)
[ "${FUSEC_CPU_TEST_QUICK:-}" = 1 ] && modes=("")
for f in "$ex"/*.fuse; do
    for mode in "${modes[@]}"; do
        name=$(basename "$f" .fuse)$mode
        "$FUSEC" "${cu[@]}" --emit=ptx $mode "$f" -o "$tmp/$name.ptx" 2>"$tmp/err"
        rc=$? # (a $(...) in check's message would reset $? before it is read)
        check "emit ptx $name: $(cat "$tmp/err")" test $rc -eq 0
        check "$name: PTX for sm_90" grep -q "^.target sm_90" "$tmp/$name.ptx"
        if [ -x "$ptxas" ]; then
            "$ptxas" -arch=sm_90 "$tmp/$name.ptx" -o "$tmp/$name.cubin" 2>"$tmp/err"
            rc=$?
            check "ptxas assembles $name: $(cat "$tmp/err")" test $rc -eq 0
        fi
    done
done
"$FUSEC" --target=cuda --arch=sm_80 --emit=cubin "$ex/layernorm.fuse" -o "$tmp/ln.cubin"
check "emit cubin exits 0" test $? -eq 0
check "the cubin is an ELF file" bash -c "head -c 4 '$tmp/ln.cubin' | od -c | grep -q 'E   L   F'"

# ---- building ------------------------------------------------------------------------------
if ! "$FUSEC" --target=cuda --emit=ir "$ex/gelu.fuse" >/dev/null 2>&1; then
    echo "FAIL: emit ir"
    fail=$((fail + 1))
fi
out=$("$FUSEC" --target=cuda "$ex/gelu.fuse" 2>&1)
rc=$?
if grep -q "libcuda.so.1 could not be loaded" <<<"$out"; then
    check "no --arch and no driver exits 3: $out" test $rc -eq 3
    check "the message says to pass --arch" grep -q -- "--arch=sm_XX" <<<"$out"
fi
out=$("$FUSEC" "${cu[@]}" "$ex/gelu.fuse" 2>&1)
check "building for sm_90 exits 0: $out" test $? -eq 0

# ---- the cache -----------------------------------------------------------------------------
export FUSEC_CACHE_DIR="$tmp/c1"
"$FUSEC" "${cu[@]}" -v "$ex/softmax.fuse" 2>"$tmp/v1"
check "a first build misses: $(grep cuda: "$tmp/v1")" grep -q "cuda: .*miss: no entry; NVRTC" "$tmp/v1"
"$FUSEC" "${cu[@]}" -v "$ex/softmax.fuse" 2>"$tmp/v2"
check "a second process hits the disk: $(grep cuda: "$tmp/v2")" grep -q "cuda: .*hit (disk)" "$tmp/v2"
check "a hit runs no NVRTC" bash -c "! grep -q NVRTC '$tmp/v2'"
check "one entry" test "$(ls "$tmp/c1"/e-*.bin | wc -l)" -eq 1

entry=$(ls "$tmp/c1"/e-*.bin)
python3 - "$entry" <<'EOF'
import sys
p = sys.argv[1]
b = bytearray(open(p, "rb").read())
b[len(b) // 2] ^= 0x40
open(p, "wb").write(bytes(b))
EOF
"$FUSEC" "${cu[@]}" -v "$ex/softmax.fuse" 2>"$tmp/v3"
check "a flipped byte is found: $(grep cuda: "$tmp/v3")" grep -q "miss: corrupt entry discarded" "$tmp/v3"
"$FUSEC" "${cu[@]}" -v "$ex/softmax.fuse" 2>"$tmp/v4"
check "the rebuilt entry hits" grep -q "hit (disk)" "$tmp/v4"
entry=$(ls "$tmp/c1"/e-*.bin)
truncate -s 100 "$entry"
"$FUSEC" "${cu[@]}" -v "$ex/softmax.fuse" 2>"$tmp/v5"
check "a truncated entry is found: $(grep cuda: "$tmp/v5")" grep -q "miss: corrupt entry discarded" "$tmp/v5"
"$FUSEC" "${cu[@]}" -v "$ex/softmax.fuse" 2>"$tmp/v6"
check "the rebuilt entry hits again" grep -q "hit (disk)" "$tmp/v6"

# a change of any key part misses, saying which
"$FUSEC" --target=cuda --arch=sm_80 -v "$ex/softmax.fuse" 2>"$tmp/v7"
check "a new arch misses: $(grep cuda: "$tmp/v7")" grep -q "miss: .*new arch (sm_90 -> sm_80)" "$tmp/v7"
"$FUSEC" "${cu[@]}" --fast-math -v "$ex/softmax.fuse" 2>"$tmp/v8"
check "fast math misses on options: $(grep cuda: "$tmp/v8")" grep -q "miss: new options" "$tmp/v8"
sed 's/max(x, axis=1)/min(x, axis=1)/' "$ex/softmax.fuse" >"$tmp/softmax.fuse"
"$FUSEC" "${cu[@]}" -v "$tmp/softmax.fuse" 2>"$tmp/v9"
check "new source misses: $(grep cuda: "$tmp/v9")" grep -q "miss: new source" "$tmp/v9"
"$FUSEC" "${cu[@]}" --no-cache -v "$ex/softmax.fuse" 2>"$tmp/v10"
check "--no-cache builds: $(grep cuda: "$tmp/v10")" grep -q "cuda: .*miss.*NVRTC" "$tmp/v10"

# 8 processes at once on a fresh directory: all succeed, NVRTC runs once, one entry
export FUSEC_CACHE_DIR="$tmp/c8"
pids=()
for i in 1 2 3 4 5 6 7 8; do
    "$FUSEC" "${cu[@]}" -v "$ex/layernorm.fuse" 2>"$tmp/p$i" &
    pids+=($!)
done
ok=0
for p in "${pids[@]}"; do wait "$p" && ok=$((ok + 1)); done
check "8 concurrent builds succeed ($ok)" test $ok -eq 8
misses=$(cat "$tmp"/p? | grep -c "cuda: .*miss")
check "NVRTC ran once among 8 processes ($misses misses)" test "$misses" -eq 1
check "one valid entry left" test "$(ls "$tmp/c8"/e-*.bin | wc -l)" -eq 1
"$FUSEC" "${cu[@]}" -v "$ex/layernorm.fuse" 2>"$tmp/p9"
check "and it hits" grep -q "hit (disk)" "$tmp/p9"

# an unwritable cache directory: the build succeeds, with exactly one warning
touch "$tmp/afile"
for dir in /dev/null/x "$tmp/afile/x"; do
    out=$("$FUSEC" "${cu[@]}" --cache-dir="$dir" "$ex/gelu.fuse" 2>&1)
    check "cache dir $dir: the build succeeds: $out" test $? -eq 0
    check "cache dir $dir: one warning" test "$(grep -c "warning:" <<<"$out")" -eq 1
done

echo "cuda_build: $pass passed, $fail failed"
[ "$fail" -eq 0 ]
