#!/usr/bin/env bash
# tests/fuzz/run.sh FUZZER [SECONDS]: a short libFuzzer run of the compiler (ctest's
# fuzz.compile). Seeds a scratch corpus from tests/fuzz/corpus and the .fuse programs of
# examples/, tests/programs/ and bench/programs/, runs
# for SECONDS (default $FUZZ_SECONDS, else 12) and fails if the fuzzer finds a crash, a
# leak, a hang or a memory blow-up; the input that did it is kept and printed.
set -euo pipefail

fuzzer=${1:?usage: run.sh FUZZER [SECONDS]}
seconds=${2:-${FUZZ_SECONDS:-12}}
root=$(cd "$(dirname "$0")/../.." && pwd)

work=$(mktemp -d "${TMPDIR:-/tmp}/fusec-fuzz.XXXXXX")
mkdir -p "$work/corpus" "$work/artifacts"

shopt -s nullglob
for seed in "$root"/tests/fuzz/corpus/* "$root"/examples/*.fuse "$root"/tests/programs/*.fuse \
    "$root"/bench/programs/*.fuse; do
    [ -f "$seed" ] && cp "$seed" "$work/corpus/"
done

dict=()
[ -f "$root/tests/fuzz/fuse.dict" ] && dict=(-dict="$root/tests/fuzz/fuse.dict")

status=0
"$fuzzer" "${dict[@]}" -max_total_time="$seconds" -timeout=5 -rss_limit_mb=2048 \
    -max_len=16384 -print_final_stats=1 -artifact_prefix="$work/artifacts/" \
    "$work/corpus" >"$work/log" 2>&1 || status=$?

if [ "$status" -ne 0 ]; then
    tail -n 60 "$work/log"
    for a in "$work"/artifacts/*; do
        echo "== fuzz: failing input kept at $a ($(wc -c <"$a") bytes):"
        od -c "$a" | head -n 40
    done
    echo "fuzz: FAILED (exit $status); the run is in $work"
    exit 1
fi
grep -E '^stat::number_of_executed_units|^Done' "$work/log" || true
rm -rf "$work"
echo "fuzz: ok (${seconds}s)"
