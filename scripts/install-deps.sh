#!/usr/bin/env bash
# scripts/install-deps.sh: installs what building and testing fusec needs on Debian 12, only
# what is missing. Run by `make`, `make test` and `make demo`; safe to run again.
set -eu
need=()
have_cmd() { command -v "$1" >/dev/null 2>&1; }
have_pkg() { dpkg-query -W -f='${Status}' "$1" 2>/dev/null | grep -q 'install ok installed'; }

have_cmd cmake || need+=(cmake)
have_cmd re2c || need+=(re2c)
have_cmd cc || need+=(gcc)
# g++ builds the generated CUDA C++ for the host in the emulated CUDA tests (tests/emu)
have_cmd g++ || need+=(g++)
# whose fibers are Boost.Context's: its run-time library alone (the -dev package would bring all
# of Boost's headers)
ls /usr/lib/*/libboost_context.so.* >/dev/null 2>&1 || need+=(libboost-context1.74.0)
have_cmd make || need+=(make)
have_cmd pkg-config || need+=(pkg-config)
have_cmd clang || need+=(clang)
have_pkg libclang-rt-14-dev || need+=(libclang-rt-14-dev)
# tests/cli/format.sh holds the sources to `make format`'s clang-format
have_cmd clang-format || need+=(clang-format)
have_pkg llvm-14-dev || need+=(llvm-14-dev)
have_pkg libxxhash-dev || need+=(libxxhash-dev)
have_cmd python3 || need+=(python3)
# the tests use numpy from whichever python3 is first on PATH
if have_cmd python3 && ! python3 -c 'import numpy' >/dev/null 2>&1; then
    if [ "$(command -v python3)" = /usr/bin/python3 ]; then
        need+=(python3-numpy)
    else
        python3 -m pip install -q numpy || need+=(python3-numpy)
    fi
fi
# the Python package's tests (tests/package): `pip install .` into a fresh venv needs the venv
# module (Debian's python3-venv for its own python3)
if have_cmd python3 && [ "$(command -v python3)" = /usr/bin/python3 ] &&
    ! python3 -c 'import ensurepip' >/dev/null 2>&1; then
    need+=(python3-venv)
fi
# bf16 numpy arrays come from ml_dtypes (small; Debian has no package of it: pip only)
if have_cmd python3 && [ "$(command -v python3)" != /usr/bin/python3 ] &&
    ! python3 -c 'import ml_dtypes' >/dev/null 2>&1; then
    python3 -m pip install -q ml_dtypes ||
        echo "install-deps: ml_dtypes not installed: the bf16 numpy tests will be skipped"
fi
# PyTorch, for the package's tensor tests, on CI only: it is large (PyPI's Linux wheel brings
# its CUDA libraries, gigabytes; the CPU wheel from PyTorch's own index is tried first). A
# failure only skips those tests.
if [ "${CI:-}" = true ] && have_cmd python3 && ! python3 -c 'import torch' >/dev/null 2>&1; then
    if [ "$(command -v python3)" = /usr/bin/python3 ]; then
        need+=(python3-torch)
    elif ! python3 -m pip install -q --retries 1 --timeout 30 torch \
        --index-url https://download.pytorch.org/whl/cpu >/dev/null 2>&1 &&
        ! timeout 1200 python3 -m pip install -q torch; then
        echo "install-deps: PyTorch not installed: the package's tensor tests will be skipped"
    fi
fi

if [ ${#need[@]} -gt 0 ]; then
    echo "install-deps: installing ${need[*]}"
    SUDO=
    [ "$(id -u)" -eq 0 ] || SUDO=sudo
    $SUDO apt-get update -qq
    DEBIAN_FRONTEND=noninteractive $SUDO apt-get install -y -qq "${need[@]}" >/dev/null
fi
