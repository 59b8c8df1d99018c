#!/usr/bin/env bash
# tests/install/run.sh: `cmake --install` of the build into a temporary prefix, then what a
# user of the installed package does: tests/install/consumer built with find_package (shared
# and static targets), the same main.c built with pkg-config (shared, and static against
# libfusec.a), each run; the installed command line; and examples/aot, a library built ahead
# of time, through fusec_add_library and by the command line. Exits 77 (skipped) when only
# pkg-config is missing and everything else passed.
set -u
: "${FUSEC_SRC:?}" "${FUSEC_BUILD:?}" "${FUSEC_VERSION:?}"
# shellcheck source=tests/lib.sh
source "$FUSEC_SRC/tests/lib.sh"
CMAKE=${CMAKE:-cmake}
CC=${CC:-cc}
prefix=$tmp/prefix
# runs COMMAND... with its output in $tmp/log, shown when it fails
logged() {
    "$@" >"$tmp/log" 2>&1 && return 0
    cat "$tmp/log"
    return 1
}
# true when the ELF file FILE needs no libfusec.so (linked libfusec.a instead)
no_libfusec_so() { ! readelf -d "$1" | grep -q 'NEEDED.*libfusec\.so'; }
main_c=$FUSEC_SRC/tests/install/consumer/main.c

if ! logged "$CMAKE" --install "$FUSEC_BUILD" --prefix "$prefix"; then
    echo "FAIL: cmake --install"
    exit 1
fi
pc=$(find "$prefix" -path '*/pkgconfig/fusec.pc' | head -n 1)
libdir=$(dirname "$(dirname "$pc")")
check "fusec.pc is installed under <libdir>/pkgconfig" test -f "$pc"
check "the header is installed" test -f "$prefix/include/fusec.h"
check "libfusec.a is installed" test -f "$libdir/libfusec.a"
check "libfusec.so.${FUSEC_VERSION} is installed" test -f "$libdir/libfusec.so.$FUSEC_VERSION"
check "libfusec.so.${FUSEC_VERSION%%.*} (the SONAME) links to it" \
    test "$(readlink "$libdir/libfusec.so.${FUSEC_VERSION%%.*}")" = "libfusec.so.$FUSEC_VERSION"
check "libfusec.so links to the SONAME" test -L "$libdir/libfusec.so"
for f in fusecConfig.cmake fusecConfigVersion.cmake fusecTargets.cmake; do
    check "$f is installed" test -f "$libdir/cmake/fusec/$f"
done
! grep -rqF -e "$FUSEC_BUILD" -e "$FUSEC_SRC" "$libdir/cmake/fusec"
check "the exported targets name no build-tree path" test $? -eq 0

# the installed command line
out=$("$prefix/bin/fusec" --version 2>&1)
check "installed fusec --version says $FUSEC_VERSION: $out" test "$out" = "fusec $FUSEC_VERSION"
out=$("$prefix/bin/fusec" --emit=ir --target=ref "$FUSEC_SRC/examples/gelu.fuse" 2>&1)
check "installed fusec compiles an example: $out" grep -q "^kernel 0 pointwise" <<<"$out"

# find_package, with nothing of the source or build tree in sight
cb=$tmp/consumer-build
if logged "$CMAKE" -S "$FUSEC_SRC/tests/install/consumer" -B "$cb" -DCMAKE_C_COMPILER="$CC" \
    -DCMAKE_PREFIX_PATH="$prefix" -DFUSEC_WANT_VERSION="$FUSEC_VERSION" \
    -DCMAKE_FIND_USE_PACKAGE_REGISTRY=OFF -DCMAKE_FIND_USE_SYSTEM_PACKAGE_REGISTRY=OFF &&
    logged "$CMAKE" --build "$cb"; then
    pass=$((pass + 1))
    check "find_package found the installed package" \
        grep -q "^fusec_DIR:PATH=$libdir/cmake/fusec\$" "$cb/CMakeCache.txt"
    # the build RPATH CMake gives the consumer finds the installed libfusec.so
    check "the find_package consumer (shared) runs" logged "$cb/consumer"
    check "the find_package consumer (shared) uses the installed libfusec.so" \
        grep -q "libfusec\.so.* => $libdir/" <<<"$(ldd "$cb/consumer")"
    check "the find_package consumer (static) runs" logged "$cb/consumer_static"
    check "the static consumer needs no libfusec.so" no_libfusec_so "$cb/consumer_static"
else
    fail=$((fail + 1))
    echo "FAIL: the find_package consumer builds"
fi

# a library built ahead of time with the installed fusec: examples/aot through find_package and
# fusec_add_library, and by the command line; neither program needs anything of fusec
ab=$tmp/aot-build
if logged "$CMAKE" -S "$FUSEC_SRC/examples/aot" -B "$ab" -DCMAKE_C_COMPILER="$CC" \
    -DCMAKE_PREFIX_PATH="$prefix" \
    -DCMAKE_FIND_USE_PACKAGE_REGISTRY=OFF -DCMAKE_FIND_USE_SYSTEM_PACKAGE_REGISTRY=OFF &&
    logged "$CMAKE" --build "$ab"; then
    pass=$((pass + 1))
    check "examples/aot (fusec_add_library) runs" logged "$ab/aot_demo"
    check "examples/aot needs no libfusec.so" no_libfusec_so "$ab/aot_demo"
    check "libfusec_rt.a is installed" test -f "$libdir/libfusec_rt.a"
else
    fail=$((fail + 1))
    echo "FAIL: examples/aot builds with fusec_add_library"
fi
# the CUDA library through fusec_add_library's ARCHS, where NVRTC is (without a GPU, the
# program says there is none to put its tensors on)
if "$prefix/bin/fusec" --emit=lib --target=cuda --arch=sm_90 -o "$tmp/nvrtc-probe" \
    "$FUSEC_SRC/examples/gelu.fuse" >/dev/null 2>&1; then
    acb=$tmp/aot-cuda-build
    check "examples/aot with AOT_CUDA=ON (ARCHS sm_90 compute_90) builds" logged "$CMAKE" \
        -S "$FUSEC_SRC/examples/aot" -B "$acb" -DCMAKE_C_COMPILER="$CC" -DAOT_CUDA=ON \
        "-DAOT_ARCHS=sm_90;compute_90" \
        -DCMAKE_PREFIX_PATH="$prefix" -DCMAKE_FIND_USE_PACKAGE_REGISTRY=OFF \
        -DCMAKE_FIND_USE_SYSTEM_PACKAGE_REGISTRY=OFF
    check "... and its library and program are made" logged "$CMAKE" --build "$acb"
    out=$("$acb/aot_demo" 2>&1)
    check "... and the program runs, or says there is no GPU: $out" \
        grep -qE 'no CUDA driver or device|built for (sm|compute)_' <<<"$out"
fi
mkdir -p "$tmp/aot-cli"
check "the installed fusec writes a library" logged "$prefix/bin/fusec" --emit=lib --target=cpu \
    --cpu=x86-64-v2,x86-64-v3 -o "$tmp/aot-cli/kernels" "$FUSEC_SRC/examples/gelu.fuse" \
    "$FUSEC_SRC/examples/softmax.fuse" "$FUSEC_SRC/examples/layernorm.fuse"
check "cc builds examples/aot against it" logged "$CC" -std=c11 -O2 -Wall -Wextra -Werror \
    "$FUSEC_SRC/examples/aot/main.c" -I"$tmp/aot-cli" -L"$tmp/aot-cli" -lkernels -lpthread -lm \
    -ldl -o "$tmp/aot-cli/aot_demo"
check "that program runs" logged "$tmp/aot-cli/aot_demo"

# pkg-config
if ! command -v pkg-config >/dev/null 2>&1; then
    echo "no pkg-config (scripts/install-deps.sh installs it): pkg-config checks skipped"
    [ "$fail" -eq 0 ] && exit 77
    echo "$pass passed, $fail failed"
    exit 1
fi
PKG_CONFIG_PATH=$(dirname "$pc")
export PKG_CONFIG_PATH
read -r -a cflags <<<"$(pkg-config --cflags fusec)"
read -r -a libs <<<"$(pkg-config --libs fusec)"
pc_libdir=$(pkg-config --variable=libdir fusec)
check "pkg-config's libdir is the installed one" test "$(cd "$pc_libdir" && pwd -P)" = \
    "$(cd "$libdir" && pwd -P)"
check "pkg-config's version is $FUSEC_VERSION" test "$(pkg-config --modversion fusec)" = \
    "$FUSEC_VERSION"
check "pkg-config: cc builds with the shared library" \
    logged "$CC" -std=c11 -Wall -Wextra -Werror "${cflags[@]}" "$main_c" -o "$tmp/pc_shared" \
    "${libs[@]}" -Wl,-rpath,"$pc_libdir"
check "pkg-config: the shared build runs" logged "$tmp/pc_shared"

# --static adds Libs.private; -lfusec becomes -l:libfusec.a, since -lfusec alone would pick
# the libfusec.so beside it
read -r -a slibs <<<"$(pkg-config --static --libs fusec)"
for i in "${!slibs[@]}"; do [ "${slibs[$i]}" = -lfusec ] && slibs[i]=-l:libfusec.a; done
check "pkg-config --static: cc builds against libfusec.a" \
    logged "$CC" -std=c11 -Wall -Wextra -Werror "${cflags[@]}" "$main_c" -o "$tmp/pc_static" \
    "${slibs[@]}"
check "pkg-config --static: the build runs" logged "$tmp/pc_static"
check "pkg-config --static: the build needs no libfusec.so" no_libfusec_so "$tmp/pc_static"

echo "$pass passed, $fail failed"
[ "$fail" -eq 0 ]
