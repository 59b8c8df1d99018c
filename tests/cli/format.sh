#!/usr/bin/env bash
# tests/cli/format.sh: every C source and header of the checkout is as `make format`
# (clang-format with the repo's .clang-format) leaves it, so formatting does not drift. Run
# with clang-format 14, Debian 12's, which scripts/install-deps.sh installs: other versions
# format some constructs differently, so with another, or outside a git checkout, skipped (77).
set -u
: "${FUSEC_SRC:?}"
cd "$FUSEC_SRC" || exit 1
command -v clang-format >/dev/null || { echo "no clang-format"; exit 77; }
clang-format --version | grep -q 'version 14\.' || { echo "clang-format is not version 14"; exit 77; }
files=$(git ls-files '*.c' '*.h' 2>/dev/null) || { echo "not a git checkout"; exit 77; }
[ -n "$files" ] || { echo "not a git checkout"; exit 77; }
present=()
for f in $files; do
    [ -f "$f" ] && present+=("$f") # (deleted in the working tree, not yet in the index)
done
# one process for every file (one each took seconds of process starts): it names each file
# it would change, "FILE:LINE:COL: error: code should be clang-formatted"
out=$(clang-format --dry-run -Werror "${present[@]}" 2>&1)
bad=$(grep -o '^[^:]*:[0-9]*:[0-9]*: error: code should be clang-formatted' <<<"$out" |
    cut -d: -f1 | sort -u)
for f in $bad; do
    echo "FAIL: $f is not formatted (make format)"
done
nbad=$(echo "$bad" | grep -c .)
echo "${#present[@]} files, $nbad not formatted"
[ "$nbad" -eq 0 ] && ! grep -q "error:" <<<"$out"
