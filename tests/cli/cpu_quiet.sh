#!/usr/bin/env bash
# tests/cli/cpu_quiet.sh: building for the CPU prints nothing but fusec's own messages. LLVM
# prints its remarks and warnings to stderr unless the context has a diagnostic handler: f64
# casts and math (loops fusec asks LLVM to vectorize that call the C library) printed "remark:
# loop not vectorized" and "warning: ... unable to perform the requested transformation" under
# `fusec` and `fusec run` (driver/cpu/cpu_jit.c keeps them). Skipped (77) without the CPU
# backend.
set -u
: "${FUSEC:?}" "${FUSEC_SRC:?}"
# shellcheck source=tests/lib.sh
source "$FUSEC_SRC/tests/lib.sh"
src="$FUSEC_SRC/tests/programs/cpu_dtypes.fuse"
require_cpu_backend "$src"
check "a cold CPU build of cpu_dtypes.fuse succeeds" \
    "$FUSEC" --target=cpu --no-cache "$src" 2>"$tmp/err"
check "and prints nothing to stderr" test ! -s "$tmp/err"
[ -s "$tmp/err" ] && head -5 "$tmp/err"
echo "$pass passed, $fail failed"
[ "$fail" -eq 0 ]
