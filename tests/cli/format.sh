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
bad=0
for f in $files; do
    [ -f "$f" ] || continue # deleted in the working tree, not yet in the index
    if ! clang-format --dry-run -Werror "$f" >/dev/null 2>&1; then
        echo "FAIL: $f is not formatted (make format)"
        bad=$((bad + 1))
    fi
done
echo "$(echo "$files" | wc -w) files, $bad not formatted"
[ "$bad" -eq 0 ]
