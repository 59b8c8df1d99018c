#!/usr/bin/env bash
# tests/diag/run.sh: golden tests of fusec's diagnostics.
#
# For each NAME.fuse in this directory, runs `$FUSEC NAME.fuse` from this directory (so
# the path in every message is just NAME.fuse) and compares its stderr, byte for byte, with
# NAME.expected. The exit status is not stored: it must be 1 when NAME.expected holds an
# error (a line "FILE...: error: ..."), else 0. A mismatch prints a diff; the script exits 1
# if any test failed.
#
#   FUSEC     path to the fusec binary (required)
#   UPDATE=1  rewrite every NAME.expected from the current output (then review the diff)
set -u
here=$(cd "$(dirname "$0")" && pwd)
: "${FUSEC:?set FUSEC to the fusec binary}"
case $FUSEC in /*) ;; *) FUSEC=$PWD/$FUSEC ;; esac
cd "$here" || exit 1
tmp=$(mktemp -d)
trap 'rm -rf "$tmp"' EXIT

failed=0 total=0
for src in *.fuse; do
    name=${src%.fuse}
    total=$((total + 1))
    timeout 60 "$FUSEC" "$src" >/dev/null 2>"$tmp/stderr" </dev/null
    rc=$?
    if [ "${UPDATE:-0}" = 1 ]; then
        cp "$tmp/stderr" "$name.expected"
    fi
    want_rc=0
    grep -qE '^[^[:space:]]+: error: ' "$name.expected" 2>/dev/null && want_rc=1
    ok=1
    if ! cmp -s "$tmp/stderr" "$name.expected"; then
        echo "FAIL $name: stderr differs from $name.expected:"
        diff -u "$name.expected" "$tmp/stderr" | head -60
        ok=0
    fi
    if [ "$rc" != "$want_rc" ]; then
        echo "FAIL $name: exit status $rc, want $want_rc"
        ok=0
    fi
    [ $ok = 1 ] || failed=$((failed + 1))
done
echo "diag: $((total - failed)) of $total passed"
[ $failed = 0 ]
