# tests/lib.sh: what the shell tests share, sourced after `set -u`: a temporary directory
# removed at exit ($tmp), check(), which counts passes and failures and names a failure, and
# require_cpu_backend.
tmp=$(mktemp -d)
trap 'rm -rf "$tmp"' EXIT
fail=0 pass=0
check() { # check DESCRIPTION COMMAND...
    local what=$1
    shift
    if "$@"; then pass=$((pass + 1)); else
        fail=$((fail + 1))
        echo "FAIL: $what"
    fi
}
require_cpu_backend() { # exits 77 (skipped) where this build has no CPU backend
    if "$FUSEC" --target=cpu --emit=plan "$1" 2>&1 | grep -q "not part of this build"; then
        echo "no CPU backend"
        exit 77
    fi
}
