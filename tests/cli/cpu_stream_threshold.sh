#!/usr/bin/env bash
# tests/cli/cpu_stream_threshold.sh: the size from which CPU launches stream their results
# (runtime/cpu/cpu_launch.c): 8 MiB, or an eighth of the host's L3 where that is more (results
# that fit in a large L3 stay there for their next reader), and FUSEC_CPU_STREAM_MIN_BYTES
# where it is set. `fusec -v` says which. Skipped (77) without the CPU backend.
set -u
: "${FUSEC:?}" "${FUSEC_SRC:?}"
# shellcheck source=tests/lib.sh
source "$FUSEC_SRC/tests/lib.sh"
src="$FUSEC_SRC/examples/gelu.fuse"
require_cpu_backend "$src"
threshold() { # the bytes fusec -v reports, under the environment given
    env "$@" "$FUSEC" --target=cpu -v "$src" 2>&1 |
        sed -n 's/.*results of \([0-9]*\) bytes or more stream.*/\1/p'
}
l3=$(getconf LEVEL3_CACHE_SIZE 2>/dev/null)
case "$l3" in '' | *[!0-9]*) l3=0 ;; esac
want=$(awk -v l3="$l3" 'BEGIN { t = l3 / 8; if (t < 8388608) t = 8388608; printf "%.0f", t }')
got=$(threshold -u FUSEC_CPU_STREAM_MIN_BYTES)
echo "L3 $l3 bytes: streaming from $got bytes (want $want)"
check "the threshold is 8 MiB or an eighth of the L3 ($want)" test "$got" = "$want"
check "FUSEC_CPU_STREAM_MIN_BYTES=0 streams everything" \
    test "$(threshold FUSEC_CPU_STREAM_MIN_BYTES=0)" = 0
check "FUSEC_CPU_STREAM_MIN_BYTES=123456 is taken as it is" \
    test "$(threshold FUSEC_CPU_STREAM_MIN_BYTES=123456)" = 123456
check "a malformed FUSEC_CPU_STREAM_MIN_BYTES is ignored" \
    test "$(threshold FUSEC_CPU_STREAM_MIN_BYTES=12x)" = "$want"
echo "$pass passed, $fail failed"
[ "$fail" -eq 0 ]
