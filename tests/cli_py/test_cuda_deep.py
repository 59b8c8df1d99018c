"""tests/cli_py/test_cuda_deep.py: programs whose kernels hold a great deal of math build in bounded
time through NVRTC, and the math a kernel calls out of line gives the bits it gives inline
(codegen/cuda/cuda_outline.c).

1. Build time (issue 29): a chain of 60 sin took 18 s to build through NVRTC, 150 with their
   gradient over a minute, every sinf inlined; above a budget the math is called out of line
   now. Each deep program of deepprog.DEEP must build cold (--no-cache) to an sm_90 cubin
   within CEILING_S seconds of CPU time: a generous ceiling (they take 0.5-6 s on a 2-core
   EPYC) that still fails a return of the explosion. The real NVRTC only, no GPU needed (not
   under the stand-in, FUSEC_NVRTC_PATH, which builds host code); not measured where NVRTC
   cannot be loaded; one program under the sanitizers.
2. The kernels of the examples call nothing out of line (they are emitted as before), and the
   big kernel of deepprog.bits_program calls each heavy function through its wrapper.
3. Where CUDA code runs, on a GPU (scripts/gpu-check.sh) or the emulated one (ctest's
   emu.cuda_deep): `big`, every function out of line, gives each function's very bits as a
   kernel computing it alone (inline), in f32; and the deep programs agree with the reference
   (--target=ref), in f32 and f64."""
import glob
import os
import re
import sys

sys.path.insert(0, os.path.dirname(__file__))
from deepprog import (BINARY, DEEP, UNARY, bits_inputs, bits_program,  # noqa: E402
                      check_against_ref, check_bits_run, compile_cpu_seconds, write)
from compile_time import program  # noqa: E402  (deepprog put bench/ on the path)
from fusectest import SRC, check, finish, run, tmpdir  # noqa: E402

OUT = tmpdir()
CEILING_S = 60.0
EMULATED = bool(os.environ.get("FUSEC_NVRTC_PATH"))


CUBIN = ["--target=cuda", "--arch=sm_90", "--emit=cubin", "-o", os.devnull, "--no-cache"]


def cuda_source(path):
    rc, out, err = run(["--target=cuda", "--emit=cuda", path])
    check(rc == 0, f"{path}: --emit=cuda: exit {rc}: {err[-400:]}")
    return out


# 2. what is out of line
for ex in sorted(glob.glob(os.path.join(SRC, "examples", "*.fuse"))):
    src = cuda_source(ex)
    check("fx_ol_" not in src, f"{os.path.basename(ex)}: a kernel calls math out of line")
# identical kernels (a chain of identical layers) are one function of the module
rows = cuda_source(write(OUT, "rows100_grad.fuse", DEEP["rows100_grad"]))
nglobal = len(re.findall(r"__global__ void __launch_bounds__\(\d+\) fusec_[^_]", rows))
check(0 < nglobal <= 40, f"rows100_grad: {nglobal} kernel functions (at most 40: its 60 "
      "kernels are a few kinds repeated)")

def globals_of(text):
    """The kernel functions of text's module, not counting its gathers (fusec__gather<bits>,
    one for each element size of its parameters)."""
    src = cuda_source(write(OUT, f"dedup{abs(hash(text))}.fuse", text))
    return len(re.findall(r"__global__ void __launch_bounds__\(\d+\) fusec_[^_]", src))


# ... and only those: a constant, a dtype or an operation apart, kernels stay apart
FNS = {"a": "fn a(x: f32[N]) -> f32[N] { return exp(x * 0.5) + 1.0; }",
       "b": "fn b(x: f32[N]) -> f32[N] { return exp(x * 0.25) + 1.0; }",
       "c": "fn c(x: f64[N]) -> f64[N] { return exp(x * 0.5) + 1.0; }",
       "d": "fn d(x: f32[N]) -> f32[N] { return sin(x * 0.5) + 1.0; }",
       "e": "fn e(y: f32[M]) -> f32[M] { return exp(y * 0.5) + 1.0; }"}  # a, renamed
one = globals_of(FNS["a"])
four = globals_of("\n".join(FNS[f] for f in "abcd"))
check(one > 0 and four == 4 * one, f"a, b, c and d: {four} kernel functions ({4 * one} expected)")
five = globals_of("\n".join(FNS[f] for f in "abcde"))
check(five == four, f"e is a renamed: {five} kernel functions ({four} expected)")
ops = UNARY + BINARY
bits = {dt: write(OUT, f"bits_{dt}.fuse", bits_program(dt, ops)) for dt in ("f32", "f64")}
for dt, path in bits.items():
    wrappers = set(re.findall(r"__noinline__ \w+ (fx_ol_\w+)\(", cuda_source(path)))
    # sigmoid (a helper), exp2, sqrt and rsqrt (a few instructions) stay inline
    check(len(wrappers) >= len(ops) - 4, f"bits_{dt}: {len(wrappers)} wrappers "
          f"(at least {len(ops) - 4} expected): {sorted(wrappers)}")

# FUSEC_CPU_TEST_QUICK (the sanitizers' pass): one deep program's build time
if os.environ.get("FUSEC_CPU_TEST_QUICK") == "1":
    DEEP = {"sin150_grad": DEEP["sin150_grad"]}

def has_device():
    """Whether CUDA code runs here: a GPU, or the emulated one (the same probe as
    fusectest.target_or_skip)."""
    _, _, err = run(["run", os.path.join(SRC, "examples", "gelu.fuse"), "-f", "gelu",
                     "--target=cuda", "--in", "x=/nonexistent.npy"])
    return "no CUDA driver or device" not in err and "not part of this build" not in err


if not EMULATED:
    # 1. build time through the real NVRTC
    rc, _, err = run([*CUBIN, os.path.join(SRC, "examples", "gelu.fuse")])
    if rc != 0 and "FUSEC_NVRTC_PATH" in err:
        print("no NVRTC here: the build times are not measured\n" + err[-400:])
        finish()
    check(rc == 0, f"gelu.fuse: cubin: exit {rc}: {err[-400:]}")
    for name, text in DEEP.items():
        if name == "rows100_grad":
            # 10 s of NVRTC, most of this test's time; its kernels' count above guards the
            # sharing (without it: 121 functions, 77 s); the forward chain is timed instead
            name, text = "rows100", program("rows", "exp", 100, "f32", False)
        s = compile_cpu_seconds([*CUBIN, write(OUT, name + ".fuse", text)])
        print(f"{name}: {s if s is None else round(s, 2)} s of CPU time")
        check(s is not None and s < CEILING_S, f"{name}: built in {s} s of CPU time "
              f"(ceiling {CEILING_S})")
if has_device():
    # 3. on the GPU (scripts/gpu-check.sh) or the emulated one (emu.cuda_deep)
    # f32 (f64's wrappers are made by the same code: erf150_f64_grad calls them)
    check_bits_run(OUT, "f32", bits["f32"], ops, bits_inputs(OUT, "f32", "f32"), "cuda")
    check_against_ref(OUT, "sin150_grad", ["f", "d"], "cuda")
    check_against_ref(OUT, "erf150_f64_grad", ["f", "d"], "cuda")
    check_against_ref(OUT, "rows100_grad", ["f", "d"], "cuda")
else:
    print("no GPU here: the wrappers' results are checked on the emulated one (emu.cuda_deep)")
finish()
