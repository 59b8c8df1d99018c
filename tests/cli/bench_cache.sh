#!/usr/bin/env bash
# tests/cli/bench_cache.sh: `fusec bench` (table and JSON), `fusec cache stats|clear`, and
# the usage errors of both.
set -u
: "${FUSEC:?}" "${FUSEC_SRC:?}"
# shellcheck source=tests/lib.sh
source "$FUSEC_SRC/tests/lib.sh"
export FUSEC_CACHE_DIR="$tmp/cache"
ex="$FUSEC_SRC/examples"

out=$("$FUSEC" bench "$ex/gelu.fuse" -f gelu --dim N=1001 --reps 3 --target=ref 2>&1)
check "bench table exits 0: $out" test $? -eq 0
check "bench table shows the copy bandwidth" grep -q "copy bandwidth" <<<"$out"
check "bench table shows one fused kernel" grep -Eq "kernels +1$" <<<"$out"

out=$("$FUSEC" bench "$ex/softmax.fuse" -f softmax --dim R=3 --dim C=7 --reps 3 --format json \
    --target=ref --no-fuse 2>&1)
check "bench json exits 0: $out" test $? -eq 0
check "bench json is one object with the SPEC's keys" python3 -c '
import json, sys
d = json.loads(sys.argv[1])
for k in ("median_ms", "compile_cold_ms", "compile_cached_ms", "gbps", "pct_of_copy", "kernels"):
    assert k in d, k
assert d["fused"] is False and d["kernels"] == 5, d
assert d["bytes"] == 2 * 3 * 7 * 4, d
' "$out"

# --no-cold-compile: no build without the cache (a sweep of sizes builds once), no cold time;
# without it each bench builds once more, without the cache, to time a cold compile
if "$FUSEC" --target=cpu --no-cache "$ex/gelu.fuse" >/dev/null 2>&1; then
    b=(bench "$ex/gelu.fuse" -f gelu --dim N=1001 --reps 3 --target=cpu -v --format json)
    "$FUSEC" "${b[@]}" >"$tmp/cold.json" 2>"$tmp/cold.err"
    check "bench builds without the cache to time it: $(cat "$tmp/cold.err")" \
        grep -q "cpu: build:" "$tmp/cold.err"
    "$FUSEC" "${b[@]}" --no-cold-compile >"$tmp/warm.json" 2>"$tmp/warm.err"
    check "--no-cold-compile exits 0: $(cat "$tmp/warm.err")" test $? -eq 0
    check "--no-cold-compile builds nothing on a warm cache: $(cat "$tmp/warm.err")" \
        bash -c "! grep -q 'cpu: build:' '$tmp/warm.err'"
    check "--no-cold-compile reports no cold time, a cached one" python3 -c '
import json, sys
d = json.load(open(sys.argv[1]))
assert d["compile_cold_ms"] is None and d["compile_cached_ms"] >= 0, d
assert json.load(open(sys.argv[2]))["compile_cold_ms"] > 0
' "$tmp/warm.json" "$tmp/cold.json"
fi

"$FUSEC" bench "$ex/softmax.fuse" -f softmax --dim R=3 --target=ref >/dev/null 2>"$tmp/err"
check "a missing --dim exits 1" test $? -eq 1
check "a missing --dim is named" grep -q "dim 'C'" "$tmp/err"
"$FUSEC" bench "$ex/gelu.fuse" -f gelu --dim N=x >/dev/null 2>&1
check "a bad --dim is a usage error" test $? -eq 2
"$FUSEC" bench "$ex/gelu.fuse" -f gelu --dim N=5 --reps 0 >/dev/null 2>&1
check "--reps 0 is a usage error" test $? -eq 2
"$FUSEC" bench "$ex/gelu.fuse" -f gelu --dim N=5 --format xml >/dev/null 2>&1
check "--format xml is a usage error" test $? -eq 2

out=$("$FUSEC" cache stats 2>&1)
check "cache stats exits 0: $out" test $? -eq 0
check "cache stats names the directory" grep -q "$tmp/cache" <<<"$out"
out=$("$FUSEC" cache clear 2>&1)
check "cache clear exits 0: $out" test $? -eq 0
"$FUSEC" cache frobnicate >/dev/null 2>&1
check "cache with an unknown verb is a usage error" test $? -eq 2

echo "$pass passed, $fail failed"
[ "$fail" -eq 0 ]
