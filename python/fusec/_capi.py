"""fusec/_capi.py: libfusec loaded with ctypes, the structs and prototypes of fusec.h the
package uses, and the library's statuses turned into Python exceptions.

Where the library is found, first hit wins:
  1. $FUSEC_LIBRARY, a path to libfusec.so (the tests point it at the build tree);
  2. libfusec.so beside this file: the wheel `pip install .` builds puts it there, with the
     CPU backend's libfusec_llvm.so, which libfusec finds beside itself (dladdr);
  3. <checkout>/build/libfusec.so when the package is imported from python/ in a source
     checkout built with `make` (development without an install).
"""
import ctypes
import os

# ---- statuses and exceptions -----------------------------------------------------------------

OK = 0
ERR_INVALID_ARGUMENT = 1
ERR_SOURCE = 2
ERR_NOT_FOUND = 4
ERR_SHAPE = 5
ERR_DTYPE = 6


class Error(Exception):
    """Every failure of fusec. `status` is the library's fusec_status (0 when the package
    itself refused), `message` the library's message (for a source error, with the
    diagnostics)."""

    def __init__(self, message, status=0):
        super().__init__(message)
        self.message = message
        self.status = status


class ArgumentError(Error, ValueError):
    """Bad arguments: a wrong dtype, shape, count, device or layout."""


class NotFoundError(Error, AttributeError):
    """No function of that name (an AttributeError too, so getattr and hasattr work)."""


class CacheWarning(UserWarning):
    """The kernel cache could not be used as configured (a directory that cannot be created
    or written): the module's kernels were compiled and are kept in memory only, so the next
    process compiles them again. The command line prints the same warning."""


for _cls in (Error, ArgumentError, NotFoundError, CacheWarning):
    _cls.__module__ = "fusec"  # tracebacks name them as users spell them

# the statuses that mean the caller passed something wrong: ValueErrors in Python
_ARGUMENT_STATUSES = (ERR_INVALID_ARGUMENT, ERR_SHAPE, ERR_DTYPE)


def error_for(status, message):
    """The exception for a failed call's status and message."""
    if status in _ARGUMENT_STATUSES:
        return ArgumentError(message, status)
    if status == ERR_NOT_FOUND:
        return NotFoundError(message, status)
    return Error(message or status_string(status), status)


# ---- the structs of fusec.h ------------------------------------------------------------------

MAX_RANK = 8
TARGETS = {"auto": 0, "cuda": 1, "cpu": 2, "ref": 3}
TARGET_NAMES = {v: k for k, v in TARGETS.items()}
EMITS = {"ast": 0, "ir": 1, "cuda": 2, "ptx": 3, "cubin": 4, "llvm": 5, "plan": 6}
DTYPE_NAMES = ("bool", "i32", "i64", "f16", "bf16", "f32", "f64")  # fusec_dtype's order


class Options(ctypes.Structure):
    _fields_ = [("struct_size", ctypes.c_size_t), ("target", ctypes.c_int),
                ("arch", ctypes.c_char_p), ("no_fuse", ctypes.c_int), ("fast_math", ctypes.c_int),
                ("no_cache", ctypes.c_int), ("cache_dir", ctypes.c_char_p),
                ("verbose", ctypes.c_int), ("dump_after", ctypes.c_char_p),
                ("cpu", ctypes.c_char_p), ("function", ctypes.c_char_p), ("device", ctypes.c_int)]


class ParamInfo(ctypes.Structure):
    _fields_ = [("name", ctypes.c_char_p), ("dtype", ctypes.c_int), ("rank", ctypes.c_int),
                ("dims", ctypes.c_int64 * MAX_RANK), ("dim_names", ctypes.c_char_p * MAX_RANK)]


class Tensor(ctypes.Structure):
    """fusec_tensor. Calls fill arrays of these with struct.pack_into (_module._PACK), faster
    than setting fields one by one. strides: NULL (dense) or rank int64s in elements, as
    DLPack's are."""
    _fields_ = [("data", ctypes.c_void_p), ("dtype", ctypes.c_int), ("rank", ctypes.c_int),
                ("shape", ctypes.c_int64 * MAX_RANK), ("strides", ctypes.c_void_p)]


TENSOR_SIZE = ctypes.sizeof(Tensor)
SHAPE_OFFSET = Tensor.shape.offset

# ---- loading the library ---------------------------------------------------------------------


def _candidates():
    env = os.environ.get("FUSEC_LIBRARY")
    if env:
        return [env]
    here = os.path.dirname(os.path.abspath(__file__))
    return [os.path.join(here, "libfusec.so"),
            os.path.join(here, "..", "..", "build", "libfusec.so")]


def _load():
    tried = []
    for path in _candidates():
        if os.path.exists(path):
            return ctypes.CDLL(os.path.abspath(path)), os.path.abspath(path)
        tried.append(path)
    raise ImportError("fusec: libfusec.so not found (looked at %s); set FUSEC_LIBRARY to its "
                      "path, or build the checkout with `make`" % ", ".join(tried))


lib, LIBRARY_PATH = _load()

_P = ctypes.c_void_p
_I = ctypes.c_int
_S = ctypes.c_char_p


def _proto(name, restype, *argtypes):
    fn = getattr(lib, name)
    fn.restype = restype
    fn.argtypes = list(argtypes)
    return fn


version_number = _proto("fusec_version_number", ctypes.c_uint)
version_string = _proto("fusec_version_string", _S)
_status_string = _proto("fusec_status_string", _S, _I)
options_init = _proto("fusec_options_init", None, ctypes.POINTER(Options))
module_compile_file = _proto("fusec_module_compile_file", _I, _S, ctypes.POINTER(Options),
                             ctypes.POINTER(_P))
module_compile_string = _proto("fusec_module_compile_string", _I, _S, _S, ctypes.c_size_t,
                               ctypes.POINTER(Options), ctypes.POINTER(_P))
module_build = _proto("fusec_module_build", _I, _P)
module_free = _proto("fusec_module_free", None, _P)
module_diagnostics = _proto("fusec_module_diagnostics", _S, _P)
module_message = _proto("fusec_module_message", _S, _P)
module_target = _proto("fusec_module_target", _I, _P)
module_emit = _proto("fusec_module_emit", _I, _P, _I, ctypes.POINTER(_P),
                     ctypes.POINTER(ctypes.c_size_t))
module_report = _proto("fusec_module_report", _S, _P)
module_num_functions = _proto("fusec_module_num_functions", _I, _P)
module_function_at = _proto("fusec_module_function_at", _P, _P, _I)
module_function = _proto("fusec_module_function", _I, _P, _S, ctypes.POINTER(_P))
function_name = _proto("fusec_function_name", _S, _P)
function_num_params = _proto("fusec_function_num_params", _I, _P)
function_grad_of = _proto("fusec_function_grad_of", _S, _P)
function_grad_wrt = _proto("fusec_function_grad_wrt", _I, _P, _I)
function_num_results = _proto("fusec_function_num_results", _I, _P)
function_param = _proto("fusec_function_param", _I, _P, _I, ctypes.POINTER(ParamInfo))
function_result = _proto("fusec_function_result", _I, _P, _I, ctypes.POINTER(ParamInfo))
function_num_kernels = _proto("fusec_function_num_kernels", _I, _P)
function_result_shapes = _proto("fusec_function_result_shapes", _I, _P, _P, _I, _P, _I)
launch = _proto("fusec_launch", _I, _P, _P, _I, _P, _I, _P)
# fusec_launch for calls, without argtypes: it takes its pointers as c_void_p objects made once
# (per function, per thread's descriptors), which saves converting each argument every call
launch_untyped = lib["fusec_launch"]
launch_untyped.restype = _I
plan_launch_untyped = lib["fusec_plan_launch"]
plan_launch_untyped.restype = _I
plan_create = _proto("fusec_plan_create", _I, _P, _P, _I, _P, _I, _P, ctypes.POINTER(_P))
plan_launch = _proto("fusec_plan_launch", _I, _P, _P)
plan_rebind = _proto("fusec_plan_rebind", _I, _P, _P, _I, _P, _I)
plan_free = _proto("fusec_plan_free", None, _P)
synchronize = _proto("fusec_synchronize", _I, _P, _P)
free = _proto("fusec_free", None, _P)


def status_string(status):
    return _status_string(status).decode()


# The structs above are fusec.h 0.7's. Before 1.0 a minor version may change them (0.4 added
# fusec_tensor.strides, 0.5 fusec_launch_dlpack, 0.6 fusec_options.function, 0.7
# fusec_options.device), and a wrong
# layout would corrupt memory rather than fail: the library must be the version these
# bindings were written for.
BINDINGS_VERSION = (0, 7)
_have = version_number()
if (_have // 10000, _have // 100 % 100) != BINDINGS_VERSION:
    raise ImportError("fusec: %s is version %s; this package's bindings (fusec/_capi.py) are "
                      "fusec.h %d.%d's" % ((LIBRARY_PATH, version_string().decode()) +
                                          BINDINGS_VERSION))
if ctypes.sizeof(Tensor) != 88 or ctypes.sizeof(ParamInfo) != 144:
    raise ImportError("fusec: unexpected struct layout on this platform")
# fusec_launch_dlpack, untyped as launch_untyped: a call's hot path hands the library the
# DLTensors its arrays' capsules hold, and the library reads them (found after the version
# check: an older library has no such symbol)
launch_dlpack_untyped = lib["fusec_launch_dlpack"]
launch_dlpack_untyped.restype = _I
