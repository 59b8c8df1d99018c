#!/usr/bin/env bash
# tests/package/pip_install.sh: `pip install .` of the checkout into a fresh virtual environment,
# then the SPEC §3b example (its CPU part) run from a directory outside the source tree with the
# installed package alone: no PYTHONPATH, FUSEC_LIBRARY or FUSEC_LLVM_MODULE, and a cold kernel
# cache, so that libfusec.so and the LLVM module it loads must both come from the package.
# Skipped (77) without the venv module or a package index (pip fetches scikit-build-core). The
# CMake build is kept in $FUSEC_BUILD/pip-build, to be looked at after a failure (each run
# still compiles every file: the objects are gone when pip's next build starts). What this
# checks is the packaging, not the code's speed: the library is built without optimization
# (a third of the compile time of a cold build), the venv borrows the interpreter's pip and
# numpy (--system-site-packages, --without-pip: seconds of ensurepip and a numpy download),
# and its own site directory, searched first, holds the package under test.
set -u
: "${FUSEC_SRC:?}" "${FUSEC_BUILD:?}"
# shellcheck source=tests/lib.sh
source "$FUSEC_SRC/tests/lib.sh"
PYTHON=${PYTHON:-python3}
unset PYTHONPATH FUSEC_LIBRARY FUSEC_LLVM_MODULE
# runs COMMAND... with its output in $tmp/log, shown when it fails
logged() {
    "$@" >"$tmp/log" 2>&1 && return 0
    cat "$tmp/log"
    return 1
}

venv=$tmp/venv
if ! logged "$PYTHON" -m venv --system-site-packages --without-pip "$venv"; then
    echo "python3 -m venv does not work here (Debian: python3-venv): skipping"
    exit 77
fi
if ! "$venv/bin/python" -m pip --version >/dev/null 2>&1; then
    # the interpreter has no pip of its own to lend: the venv gets one (ensurepip)
    rm -rf "$venv"
    if ! logged "$PYTHON" -m venv --system-site-packages "$venv"; then
        echo "python3 -m venv cannot install pip here (Debian: python3-venv): skipping"
        exit 77
    fi
fi
py=$venv/bin/python
if ! logged "$py" -m pip download -q --no-deps -d "$tmp/probe" scikit-build-core; then
    echo "pip cannot reach a package index: skipping"
    exit 77
fi
if ! logged "$py" -m pip install "$FUSEC_SRC" \
    --config-settings=build-dir="$FUSEC_BUILD/pip-build" \
    --config-settings=cmake.build-type=Debug; then
    echo "FAIL: pip install ."
    exit 1
fi
if ! "$py" -c "import numpy" 2>/dev/null; then
    check "numpy installs into the venv" logged "$py" -m pip install -q numpy
fi

site=$("$py" -c 'import sysconfig; print(sysconfig.get_paths()["platlib"])')
check "the package holds libfusec.so" test -f "$site/fusec/libfusec.so"
check "the package holds libfusec_llvm.so" test -f "$site/fusec/libfusec_llvm.so"
check "the wheel installs nothing beside the package" \
    test -z "$(ls "$venv/bin" | grep -i fusec)"

# the SPEC's example, from elsewhere, against a cold cache
mkdir -p "$tmp/elsewhere"
cat >"$tmp/elsewhere/layer.fuse" <<'EOF'
fn gelu(x: f32[N]) -> f32[N] {
    return 0.5 * x * (1.0 + tanh(0.7978845608028654 * (x + 0.044715 * x * x * x)));
}
fn stats(x: f32[R, C]) -> (f32[R], f32[R]) {
    return mean(x, axis=1), max(x, axis=1);
}
EOF
cat >"$tmp/elsewhere/example.py" <<'EOF'
import os, sys
import numpy as np
import fusec
site = sys.argv[1]
assert fusec.LIBRARY_PATH == os.path.join(site, "fusec", "libfusec.so"), fusec.LIBRARY_PATH
m = fusec.compile("layer.fuse", target="auto")   # or fusec.compile_string(SOURCE, ...)
assert m.target == "cpu", m.target               # no GPU here
x = np.linspace(-3, 3, 1000, dtype=np.float32)
y = m.gelu(x)
ref = 0.5 * x * (1 + np.tanh(0.7978845608028654 * (x + 0.044715 * x ** 3)))
assert np.allclose(y, ref, atol=1e-6), "gelu"
y2 = np.empty_like(x)
assert m.gelu(x, out=y2) is y2 and np.array_equal(y, y2), "out="
x2 = np.arange(12, dtype=np.float32).reshape(3, 4)
s, mx = m.stats(x2)                              # several results come back as a tuple
assert np.allclose(s, x2.mean(1)) and np.array_equal(mx, x2.max(1)), "stats"
p = m.gelu.plan(x, out=y)                        # p() replays, p.rebind(x2, out=y2)
p()
x3, y3 = x * 0.5, np.empty_like(x)
p.rebind(x3, out=y3)
p()
assert np.allclose(y3, m.gelu(x3)), "rebind"
assert m.functions == ("gelu", "stats"), m.functions
assert m.gelu.params[0] == ("x", "f32", ("N",)), m.gelu.params
assert [tuple(r[1:]) for r in m.stats.results] == [("f32", ("R",))] * 2, m.stats.results
try:
    m.gelu(x.astype(np.float64))
    raise AssertionError("no error for a wrong dtype")
except ValueError as e:
    assert isinstance(e, fusec.Error) and "expected f32, got f64" in str(e), e
with open("/proc/self/maps") as f:
    llvm = {line.split()[-1] for line in f if "libfusec_llvm.so" in line}
assert llvm == {os.path.join(site, "fusec", "libfusec_llvm.so")}, llvm
print("the SPEC example ran from", os.getcwd(), "with", fusec.LIBRARY_PATH)
EOF
out=$(cd "$tmp/elsewhere" && FUSEC_CACHE_DIR=$tmp/cold-cache "$py" example.py "$site" 2>&1)
check "the SPEC example runs with the installed package: $out" test $? -eq 0
echo "$out"

echo "$pass passed, $fail failed"
[ "$fail" -eq 0 ]
