# tests/lib.sh: what the shell tests share, sourced after `set -u`: a temporary directory
# removed at exit ($tmp), and check(), which counts passes and failures and names a failure.
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
