"""tests/cli_py/test_aot.py: libraries built ahead of time (fusec --emit=lib, issue 31).

examples/aot's program is built from the header and archive fusec writes for GELU, softmax and
layernorm, and run at every CPU level the library holds that this host runs ($FUSEC_CPU picks
one): each level's results must be `fusec run`'s, bit for bit (SPEC §5: one answer on every CPU
level). The program must hold none of the compiler's symbols and load no library but the C
library's; tests/aot/threads.c calls it from several threads at once on a cold library, then
with bad arguments. Then what a careless user of --emit=lib meets: no -o, another target, a
name C would not take, an unknown CPU, a directory that is not there, a function named like
the library's own, two functions of one name.

CUDA libraries: without a GPU, examples/aot's program linked with one returns "no device"
(9) cleanly; with the emulated driver and NVRTC (ctest's emu.aot, FUSEC_TEST_TARGET=cuda,
whose device memory is host memory), it runs and its results are `fusec run --target=cuda`'s
bit for bit, from the cubin for the stand-in device's architecture (or PTX when the library
holds no cubin it runs)."""
import os
import re
import shutil
import subprocess

from fusectest import SRC, check, finish, run, target_or_skip, tmpdir

TARGET = target_or_skip()
CC = os.environ.get("FUSEC_TEST_CC") or shutil.which("cc") or shutil.which("gcc")
if not CC:
    print("no C compiler: skipping")
    raise SystemExit(77)
# the sanitizers' builds archive instrumented runtime objects: their programs link the same way
FLAGS = os.environ.get("FUSEC_TEST_SANITIZE_FLAGS", "").split()
EX = [os.path.join(SRC, "examples", f + ".fuse") for f in ("gelu", "softmax", "layernorm")]
LEVELS = ["x86-64-v2", "x86-64-v3", "x86-64-v4"]

def cc(args, what):
    p = subprocess.run([CC] + FLAGS + args, capture_output=True, text=True, timeout=300)
    check(p.returncode == 0, f"{what}: {p.stderr[-2000:]}")
    return p.returncode == 0


def probe(where, name, source, libs, what, env=None):
    """NAME.c (source) in `where`, built against the libraries `libs` there and run: the
    finished process, or None when it did not build (then a failed check says why)."""
    src = os.path.join(where, name + ".c")
    with open(src, "w") as f:
        f.write(source)
    if not cc(["-std=c11", src, "-o", src[:-2], "-I", where, "-L", where] +
              [f"-l{lib}" for lib in libs] + ["-lpthread", "-lm", "-ldl"], what):
        return None
    return subprocess.run([src[:-2]], capture_output=True, text=True, timeout=300, env=env)


def same_as_run(out_dir, target):
    """examples/aot's results in out_dir (aot_demo DIR's files) against `fusec run` with the
    options `target` on its inputs, bit for bit; returns each function's results (bits)."""
    import numpy as np
    results = {}
    for fn, ins in (("gelu", "x"), ("softmax", "x"), ("layernorm", "xwb")):
        ref = os.path.join(out_dir, f"{fn}_ref.npy")
        args = ["run", os.path.join(SRC, "examples", fn + ".fuse"), "-f", fn, *target,
                "--out", ref]
        for name in ins:
            args += ["--in", f"{name}={os.path.join(out_dir, f'{fn}_{name}.npy')}"]
        rc, _, err = run(args)
        check(rc == 0, f"fusec run {' '.join(target)} {fn}: {err}")
        got = np.load(os.path.join(out_dir, f"{fn}_y.npy")).view(np.uint32)
        want = np.load(ref).view(np.uint32) if rc == 0 else None
        check(want is not None and got.shape == want.shape and (got == want).all(),
              f"{' '.join(target)}: {fn}'s results are fusec run's, bit for bit")
        results[fn] = got
    return results


def cpu_tests(d):
    """The CPU library: every level, the symbols, threads, careless use."""
    lib = os.path.join(d, "kernels")
    rc, out, err = run(["--emit=lib", "--target=cpu", "-o", lib] + EX)
    check(rc == 0, f"--emit=lib writes the library: {rc} {err}")
    check(os.path.exists(lib + ".h") and os.path.exists(os.path.join(d, "libkernels.a")),
          "the header and the archive are there")
    header = open(lib + ".h").read() if os.path.exists(lib + ".h") else ""
    check("int kernels_gelu(const float *x, float *out0, int64_t N, void *stream);" in header,
          "the header declares gelu as the issue writes it")
    check("int kernels_layernorm(const uint16_t *x, const uint16_t *w, const uint16_t *b, "
          "uint16_t *out0, int64_t R, int64_t C, void *stream);" in header,
          "bf16 parameters are uint16_t, dims in order of first appearance")




    # the header stands alone, pedantic C99; and in C++ where there is a C++ compiler
    hprobe = os.path.join(d, "probe.c")
    with open(hprobe, "w") as f:
        f.write('#include "kernels.h"\nint main(void) { return kernels_target() == 0; }\n')
    cc(["-std=c99", "-Wall", "-Wextra", "-Werror", "-pedantic", "-fsyntax-only", "-I", d,
        hprobe],
       "the header compiles alone as C99")
    cxx = shutil.which("c++") or shutil.which("g++")
    if cxx:
        p = subprocess.run([cxx, "-x", "c++", "-Wall", "-Wextra", "-Werror", "-fsyntax-only",
                            "-I", d, hprobe], capture_output=True, text=True, timeout=300)
        check(p.returncode == 0, f"the header compiles as C++: {p.stderr[-2000:]}")

    link = ["-I", d, "-L", d, "-lkernels", "-lpthread", "-lm", "-ldl"]
    demo = os.path.join(d, "aot_demo")
    built = cc(["-std=c11", "-O2", "-Wall", "-Wextra", "-Werror",
                os.path.join(SRC, "examples", "aot", "main.c"), "-o", demo] + link,
               "examples/aot/main.c builds against the library alone")
    threads = os.path.join(d, "threads")
    built_threads = cc(["-std=c11", "-O2", os.path.join(SRC, "tests", "aot", "threads.c"), "-o",
                        threads] + link, "tests/aot/threads.c builds")

    if built:
        # none of the compiler in the program, nothing loaded but the C library
        syms = subprocess.run(["nm", demo], capture_output=True, text=True).stdout
        bad = [s.split()[-1] for s in syms.splitlines()
               if re.search(r" [TtDdBbRr] (parse_|lex_|pass_|llvm_|lg_|cugen_|rt_nvrtc|rt_cache|"
                            r"LLVM|fusec_module_|fusec_launch|plan_(?!shape_count|split_pieces)|"
                            r"ir_(?!dims_count|byte_span|shape_concrete|dtypes))", s)]
        check(not bad, f"the program holds none of the compiler's symbols: {bad[:5]}")
        if not FLAGS:
            libs = subprocess.run(["ldd", demo], capture_output=True, text=True).stdout
            extra = [line.split()[0] for line in libs.splitlines() if line.split() and not re.match(
                r"(linux-vdso|libc\.so|libm\.so|libpthread\.so|libdl\.so|/lib64/ld-linux|ld-linux)",
                line.split()[0])]
            check(not extra, f"the program loads no library but the C library's: {extra}")

        # each level's results are fusec run's for that CPU (--cpu), bit for bit; and the levels
        # with fused multiply-adds (x86-64-v3, -v4) give one answer (x86-64-v2, without them, is
        # outside SPEC §5's: docs/reproducibility.md)
        ran = 0
        results = {}
        for level in LEVELS:
            out_dir = os.path.join(d, level)
            os.mkdir(out_dir)
            env = dict(os.environ, FUSEC_CPU=level)
            p = subprocess.run([demo, out_dir], capture_output=True, text=True, env=env,
                               timeout=300)
            if p.returncode == 1 and "holds no code for it that this CPU runs" in p.stderr:
                print(f"{level}: this host cannot run it")
                continue
            check(p.returncode == 0, f"{level}: the program runs: {p.stdout}{p.stderr}")
            check(f"built for {level}" in p.stdout, f"{level}: the library runs {level}'s code: "
                  f"{p.stdout}")
            if p.returncode != 0:
                continue
            ran += 1
            for fn, got in same_as_run(out_dir, ["--target=cpu", f"--cpu={level}"]).items():
                results.setdefault(fn, {})[level] = got
        for fn, by in results.items():
            if "x86-64-v3" in by and "x86-64-v4" in by:
                check((by["x86-64-v3"] == by["x86-64-v4"]).all(),
                      f"{fn}: x86-64-v3 and x86-64-v4 give one answer")
        check(ran >= 1, "the library runs here at some level (x86-64-v2 at least)")
        best = [lv for lv in LEVELS if lv in results.get("gelu", {})][-1:]
        env = {k: v for k, v in os.environ.items() if k != "FUSEC_CPU"}
        p = subprocess.run([demo], capture_output=True, text=True, env=env, timeout=300)
        check(p.returncode == 0 and best and f"built for {best[0]}" in p.stdout,
              f"without FUSEC_CPU the library runs the best code this host runs ({best}): "
              f"{p.stdout}{p.stderr}")
        env = dict(os.environ, FUSEC_CPU="skylake-avx512")
        p = subprocess.run([demo], capture_output=True, text=True, env=env, timeout=300)
        check(p.returncode == 1 and "holds no code for it" in p.stderr,
              f"FUSEC_CPU naming a CPU the library lacks: a clear failure: {p.stderr}")

    if built_threads:
        p = subprocess.run([threads], capture_output=True, text=True, timeout=300)
        check(p.returncode == 0, f"tests/aot/threads.c: {p.stdout}{p.stderr}")

    # two libraries in one program: each archive holds the runtime, which the linker takes
    # once (the first archive's members), and each library keeps its own image
    two = os.path.join(d, "two")
    os.mkdir(two)
    ok = all(run(["--emit=lib", "--target=cpu", "-o", os.path.join(two, n), f])[0] == 0
             for n, f in (("la", EX[0]), ("lb", EX[1])))
    check(ok, "two libraries are written")
    p = ok and probe(two, "two",
                     '#include <stdio.h>\n#include "la.h"\n#include "lb.h"\nint main(void) {\n'
                     '    float x[6] = {1, 2, 3, 4, 5, 6}, y[6], z[6];\n'
                     '    int a = la_gelu(x, y, 6, NULL), b = lb_softmax(x, z, 2, 3, NULL);\n'
                     '    printf("%d %d %.6f %.6f\\n", a, b, y[1], z[0] + z[1] + z[2]);\n'
                     '    return a || b;\n}\n', ["la", "lb"], "a program links two libraries")
    if p:
        f = p.stdout.split()
        check(p.returncode == 0 and len(f) == 4 and abs(float(f[2]) - 1.9545977) < 1e-5 and
              abs(float(f[3]) - 1) < 1e-5, f"both libraries run in one program: {p.stdout}"
              f"{p.stderr}")

    # what a careless user meets: statuses and messages, never a crash or half a library
    for args, code, msg, what in (
            (["--emit=lib", "--target=cpu"] + EX[:1], 2, "needs -o", "no -o"),
            (["--emit=lib", "-o", lib] + EX[:1], 2, "--target=cpu or --target=cuda",
             "the default target"),
            (["--emit=lib", "--target=ref", "-o", lib] + EX[:1], 2,
             "--target=cpu or --target=cuda", "the reference target"),
            (["--emit=lib", "--target=cpu", "--arch=sm_90", "-o", lib] + EX[:1], 2,
             "takes --cpu, not --arch", "--arch for a CPU library"),
            (["--emit=lib", "--target=cpu", "-o", os.path.join(d, "1-bad")] + EX[:1], 2,
             "C identifier", "a name C would not take"),
            (["--emit=lib", "--target=cpu", "--cpu=x86-64-v3,pentium", "-o", lib] + EX[:1], 2,
             "unknown CPU 'pentium'", "an unknown CPU"),
            (["--emit=lib", "--target=cpu", "-o", os.path.join(d, "no", "such", "dir", "k")]
             + EX[:1], 1, "cannot write", "a directory that is not there"),
            (["--emit=lib", "--target=cpu", "-o", lib, EX[0], EX[0]], 2, "two functions named",
             "one function twice")):
        rc, out, err = run(args)
        check(rc == code and msg in err, f"{what}: exit {code} saying '{msg}': {rc} {err}")
    named = os.path.join(d, "target.fuse")
    with open(named, "w") as f:
        f.write("fn target(x: f32[N]) -> f32[N] { return x + 1.0; }\n")
    rc, _, err = run(["--emit=lib", "--target=cpu", "-o", lib, named])
    check(rc == 2 and "library's own" in err, f"a function named 'target': refused: {rc} {err}")
    check(not [f for f in os.listdir(d) if f.endswith(".tmp")], "no temporary file left behind")


def emulated_env():
    """The environment of a program run on the emulated GPU: the stand-in driver's, with the
    ASan run-time library its kernels need preloaded (fusectest.fusec_env's)."""
    env = dict(os.environ)
    pre = os.environ.get("FUSEC_TEST_PRELOAD")
    if pre:
        env["LD_PRELOAD"] = pre
    return env


def cuda_tests(d, emulated):
    """A CUDA library: written with NVRTC (skipped without it), linked, run. Emulated: the
    stand-in NVRTC builds for sm_80 and sm_90 here, the stand-in device is sm_90."""
    env = dict(os.environ, FUSEC_EMU_NVRTC_ARCHS="80,90")
    cd = os.path.join(d, "cuda")
    os.mkdir(cd)
    lib = os.path.join(cd, "kernels")
    rc, out, err = run(["--emit=lib", "--target=cuda", "--arch=sm_90", "-o", lib] + EX, env=env)
    if rc != 0 and "NVRTC" in err and not emulated:
        print(f"CUDA libraries: NVRTC is not here: skipped ({err.strip()})")
        return
    check(rc == 0, f"--emit=lib --target=cuda writes the library: {rc} {err}")
    header = open(lib + ".h").read() if os.path.exists(lib + ".h") else ""
    check("a CUstream" in header and "int kernels_gelu(const float *x, float *out0, int64_t N, "
          "void *stream);" in header, "the CUDA header declares gelu, its stream a CUstream")
    # examples/aot's program against it, its tensors in device memory
    demo = os.path.join(cd, "aot_demo")
    if rc != 0 or not cc(["-std=c11", "-O2", "-Wall", "-Wextra", "-Werror", "-DKERNELS_CUDA",
                          os.path.join(SRC, "examples", "aot", "main.c"), "-o", demo, "-I", cd,
                          "-L", cd, "-lkernels", "-lpthread", "-lm", "-ldl"],
                         "examples/aot/main.c builds against the CUDA library alone"):
        return
    if not emulated:
        p = subprocess.run([demo], capture_output=True, text=True, timeout=300)
        if "no CUDA driver or device" not in p.stderr and p.returncode == 0:
            print("a GPU is here: the no-device check is skipped (the program passes host "
                  "pointers, which only the emulated driver takes)")
            return
        check(p.returncode == 1 and "no CUDA driver or device" in p.stderr,
              f"without a GPU the program says so: {p.stdout}{p.stderr}")
        # the library itself, called with no device there: status 9 and why
        p = probe(cd, "nodev", '#include <stdio.h>\n#include "kernels.h"\nint main(void) {\n'
                  '    float x[3] = {1, 2, 3}, y[3];\n'
                  '    int rc = kernels_gelu(x, y, 3, NULL);\n'
                  '    printf("%d %s\\n", rc, kernels_last_error());\n'
                  '    return kernels_target() != NULL;\n}\n', ["kernels"],
                  "a program calling the CUDA library builds")
        if p:
            check(p.returncode == 0 and p.stdout.startswith("9 no CUDA driver or device"),
                  f"without a GPU: status 9 and why, cleanly: {p.stdout}{p.stderr}")
        return
    out_dir = os.path.join(cd, "out")
    os.mkdir(out_dir)
    p = subprocess.run([demo, out_dir], capture_output=True, text=True, timeout=600,
                       env=emulated_env())
    check(p.returncode == 0 and "built for sm_90" in p.stdout,
          f"the program runs on the emulated GPU, sm_90's cubin: {p.stdout}{p.stderr}")
    if p.returncode == 0:
        same_as_run(out_dir, ["--target=cuda"])
    # on a device of another major version: nothing of the library runs there
    p = subprocess.run([demo], capture_output=True, text=True, timeout=300,
                       env=dict(emulated_env(), FUSEC_MOCK_CC="75"))
    check(p.returncode == 1 and "failed (8)" in p.stderr and "none of which the GPU" in p.stderr,
          f"an sm_75 GPU: status 8, saying what the library holds: {p.stderr}")
    # a cubin of another major version is passed over for PTX the driver compiles
    lib = os.path.join(cd, "gp")
    rc, _, err = run(["--emit=lib", "--target=cuda", "--arch=sm_80,compute_80", "-o", lib,
                      EX[0]], env=env)
    check(rc == 0, f"a library of sm_80 and PTX: {err}")
    p = rc == 0 and probe(cd, "gp", '#include <stdio.h>\n#include "gp.h"\nint main(void) {\n'
                          '    float x[3] = {1, 2, 3}, y[3];\n'
                          '    int rc = gp_gelu(x, y, 3, NULL);\n'
                          '    printf("%d %s %.6f\\n", rc, gp_target(), y[1]);\n'
                          '    return rc;\n}\n', ["gp"], "a program builds against it",
                          env=emulated_env())
    if p:
        f = p.stdout.split()
        check(p.returncode == 0 and f[:2] == ["0", "compute_80"] and
              abs(float(f[2]) - 1.9545977) < 1e-5,
              f"an sm_90 GPU runs the sm_80 library's PTX: {p.stdout}{p.stderr}")


d = tmpdir()
if TARGET == "cpu":
    cpu_tests(d)
cuda_tests(d, TARGET == "cuda")
finish()
