#!/usr/bin/env bash
# tests/rt/standalone.sh EXE PROBE.o [SRC]: libfusec_rt needs no compiler. Runs EXE (a program linked
# with libfusec_rt and -lpthread -lm -ldl alone: test_rt_standalone.c), then checks that it
# defines no symbol of the compiler's layers (the front end's parse_/lex_, ir_, pass_, plan_ but
# the launch-time arithmetic of plan/plan_eval.c, the code generators' llvm_/lg_/cugen_,
# NVRTC's rt_nvrtc_, LLVM's) and, outside the sanitizer builds, loads no shared library but the
# C library's.
set -u
exe=$1 probe=$2 src=${3:-}
fail=0
# the folders show the split: runtime/ (libfusec_rt) includes nothing of the compiler's side
if [ -n "$src" ]; then
    up=$(grep -rlE '#include "(driver|frontend|passes)/' "$src/runtime" || true)
    if [ -n "$up" ]; then
        echo "FAIL: runtime/ includes the compiler's headers:" $up
        fail=1
    fi
fi
"$exe" "$probe" || fail=1
command -v nm >/dev/null || { echo "no nm"; exit 77; }
bad=$(nm "$exe" | awk '$2 ~ /^[TtDdBbRr]$/ {print $3}' |
    grep -E '^(parse_|lex_|ir_|pass_|plan_|llvm_|lg_|cugen_|cuda_generate|rt_nvrtc|rt_cache|LLVM|fusec_module_)' |
    grep -vxE 'plan_shape_count|plan_split_pieces|ir_dims_count|ir_byte_span|ir_shape_concrete|ir_dtypes' | head -5)
# (plan/plan_eval.c, ir/count.c and ir/dtypes.c are the runtime's too)
if [ -n "$bad" ]; then
    echo "FAIL: the program holds the compiler's symbols:" $bad
    fail=1
fi
if nm "$exe" | grep -q ' [TtDdBb] __\(asan\|tsan\|ubsan\)_'; then
    echo "(a sanitizer build: its runtime libraries are not checked)"
else
    extra=$(ldd "$exe" | awk '{print $1}' |
        grep -vE '^(linux-vdso\.so|libc\.so|libm\.so|libpthread\.so|libdl\.so|/lib64/ld-linux|ld-linux)' || true)
    if [ -n "$extra" ]; then
        echo "FAIL: the program loads more than the C library:" $extra
        fail=1
    fi
fi
[ $fail = 0 ] && echo "standalone: no compiler symbols, no library but libc's"
exit $fail
