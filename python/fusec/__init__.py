"""fusec: the kernel-fusion JIT compiler from Python (SPEC §3b).

    import fusec
    m = fusec.compile("layer.fuse", target="auto")   # or fusec.compile_string(SOURCE)
    y = m.gelu(x)                # x: any array with __dlpack__ (numpy, PyTorch, CuPy, JAX)
    m.gelu(x, out=y)             # into an existing array; several results: out=(a, b)
    s, mx = m.stats(x)           # several results come back as a tuple
    p = m.gelu.plan(x, out=y)    # a plan: p() replays it, p.rebind(x2, out=y2)
    m.functions                  # the names; m.gelu.params, m.gelu.results

A thin layer over libfusec's C interface (fusec.h), which stays the one implementation: the
package compiles, checks and launches nothing itself. It is written with ctypes rather than
cffi or a C extension because fusec.h is small and plain (opaque handles, a few structs of
fixed layout) and its calls are few per launch: ctypes needs no compiler at install time
beyond the library's own build, no extra dependency, and one wheel serves every Python 3
version. Its per-call cost is a few foreign calls per array; bench/RESULTS.md measures it
against a call from C.

Arrays are read in place through DLPack (_dlpack.py): no copy. Results are made by the
framework of the first array (numpy in, numpy out; a PyTorch tensor in, a PyTorch tensor out).
"""
from ._capi import ArgumentError, CacheWarning, Error, LIBRARY_PATH, NotFoundError
from ._capi import version_string as _version_string
from ._module import Function, Module, Param, Plan, compile, compile_string

__version__ = _version_string().decode()
__all__ = ["compile", "compile_string", "Module", "Function", "Plan", "Param", "Error",
           "ArgumentError", "NotFoundError", "CacheWarning", "LIBRARY_PATH"]


def __getattr__(name):
    """fusec.torch (fusec.torch.op) is imported on first use, so that `import fusec` reaches
    it as the docs spell it without importing PyTorch, which takes seconds, for every user."""
    if name == "torch":
        import importlib
        try:
            return importlib.import_module(".torch", __name__)
        except ModuleNotFoundError as e:
            if e.name != "torch":
                raise
            raise ImportError("fusec.torch needs PyTorch, which is not installed (pip install "
                              "torch)", name="torch") from None
    raise AttributeError("module 'fusec' has no attribute %r" % name)


def __dir__():
    return sorted(set(globals()) | {"torch"})
