"""fusec/_dlpack.py: reading arrays through DLPack (in place, never copied), and making result
arrays in the framework of the caller's first array (numpy, PyTorch, CuPy).

An array's `__dlpack__()` gives a PyCapsule holding a DLManagedTensor (DLPack 0.x, named
"dltensor") or a DLManagedTensorVersioned (1.x, "dltensor_versioned", which carries a read-only
flag). fusec borrows the capsule rather than consuming it: it keeps the capsule alive while
the library reads the memory (for a call, its duration; for a plan, until it is rebound or
closed) and never renames it, so the producer's capsule destructor calls the tensor's deleter,
exactly once, when the capsule goes. The protocol allows a capsule that is never consumed; it
leaves no path (an exception between import and launch included) where fusec would have to
call the deleter itself, and saves two foreign calls per array.

Speed: a call's cost is mostly what reading each array costs in Python. A call hands the
library the DLTensors (fusec_launch_dlpack) and reads only each capsule's pointer; where the
package reads a DLTensor itself (plans, messages, result shapes), it uses struct.unpack_from
over one view of the whole address space (MEMORY): one call for all of a DLTensor's fields,
where a ctypes struct takes one attribute access, and often one object, per field. What a
call can reuse is cached per array type (_KINDS): whether the type speaks DLPack 1.x, and how
to make results in its framework; and for numpy, the common case, where its capsules keep
their pointer, so that no foreign call is needed to find it (_module: Function._collect).

Safety: a read of MEMORY at a bad address ends the interpreter (SIGSEGV) where a foreign call
would have raised, so MEMORY is read only where no address can be bad: inside a capsule whose
type is CPython's PyCapsule (checked at each read, the layout found inside such an object at
import, and only on CPython, whose id() is the address), and inside the DLPack structs a
producer handed over, which the library reads in any case, after the checks the library makes
before it reads them (a rank with no shape pointer is refused, never read). Anything else goes
through the public PyCapsule_GetPointer, which raises.
"""
import ctypes
import struct
import sys

from ._capi import ArgumentError

# ---- memory and the DLPack structs (dlpack.h) ------------------------------------------------

# The process's memory as one read-only buffer, read only at addresses DLPack handed us (while
# the capsule that holds them lives).
MEMORY = memoryview((ctypes.c_char * sys.maxsize).from_address(0)).cast("B").toreadonly()

# DLTensor: data, device {int32 type, int32 id} read as one u64, ndim, dtype {u8 code, u8 bits,
# u16 lanes} read as one u32, shape, strides, byte_offset. Native order and alignment, as C
# lays it out; the device and dtype keys below are packed the same way.
read_tensor = struct.Struct("QQiIQQQ").unpack_from
read_dims = [struct.Struct("%dq" % r).unpack_from for r in range(9)]
read_u64 = struct.Struct("Q").unpack_from
read_two_u64 = struct.Struct("QQ").unpack_from

# DLManagedTensorVersioned: version, manager_ctx, deleter, flags, then the DLTensor
VERSIONED_TENSOR_OFFSET = 32
VERSIONED_FLAGS_OFFSET = 24
FLAG_READ_ONLY = 1
MAX_VERSION = (1, 0)

DL_CPU, DL_CUDA, DL_CUDA_HOST, DL_CUDA_MANAGED = 1, 2, 3, 13
_DEVICE_NAMES = {1: "cpu", 2: "cuda", 3: "cuda_host", 4: "opencl", 7: "vulkan", 8: "metal",
                 10: "rocm", 13: "cuda_managed", 14: "oneapi"}


def device_key(device_type, device_id=0):
    return struct.unpack("=Q", struct.pack("=ii", device_type, device_id))[0]


def device_of(key):
    return struct.unpack("=ii", struct.pack("=Q", key))


def dtype_key(code, bits, lanes=1):
    return struct.unpack("=I", struct.pack("=BBH", code, bits, lanes))[0]


# DLPack type codes: 0 int, 1 uint, 2 float, 4 bfloat, 5 complex, 6 bool
FUSEC_DTYPE = {dtype_key(6, 8): 0, dtype_key(0, 32): 1, dtype_key(0, 64): 2,
               dtype_key(2, 16): 3, dtype_key(4, 16): 4, dtype_key(2, 32): 5,
               dtype_key(2, 64): 6}
BF16_KEY = dtype_key(4, 16)


def dtype_name(key):
    """The name of a DLPack dtype fusec does not take: "uint8", "complex64", ..."""
    code, bits, lanes = struct.unpack("=BBH", struct.pack("=I", key))
    kind = {0: "int", 1: "uint", 2: "float", 4: "bfloat", 5: "complex", 6: "bool"}.get(code)
    name = "%s%d" % (kind, bits) if kind else "dlpack type code %d, %d bits" % (code, bits)
    return name if lanes == 1 else "%s x%d lanes" % (name, lanes)


def device_name(key):
    kind, index = device_of(key)
    return "%s:%d" % (_DEVICE_NAMES.get(kind, "device type %d" % kind), index)


def read_only(flags_at):
    """Whether a versioned capsule's tensor is marked read-only (legacy ones cannot be)."""
    return bool(flags_at and read_u64(MEMORY, flags_at)[0] & FLAG_READ_ONLY)


# ---- capsules --------------------------------------------------------------------------------

get_pointer = ctypes.pythonapi["PyCapsule_GetPointer"]
get_pointer.restype = ctypes.c_void_p
get_pointer.argtypes = [ctypes.py_object, ctypes.c_char_p]
_get_name = ctypes.pythonapi["PyCapsule_GetName"]
_get_name.restype = ctypes.c_char_p
_get_name.argtypes = [ctypes.py_object]
VERSIONED_NAME = b"dltensor_versioned"
LEGACY_NAME = b"dltensor"
_PROBE_NAME = b"fusec-probe"  # lives as long as the module: a capsule keeps the pointer


def _capsule_layout():
    """CPython's PyCapsule type, and where such an object keeps its pointer, with its name's
    pointer 8 bytes on (right after the object header; the struct is private, so it is found
    by making a capsule rather than assumed); (type, None) where that cannot be known safely.
    Only CPython's id() is an object's address, and the probe reads only inside the object
    (its type's __basicsize__), so that it cannot touch memory that is not there."""
    new = ctypes.pythonapi["PyCapsule_New"]
    new.restype = ctypes.py_object
    new.argtypes = [ctypes.c_void_p, ctypes.c_char_p, ctypes.c_void_p]
    marker = 0x5EEDF00DCAFE1230
    cap = new(marker, _PROBE_NAME, None)
    kind = type(cap)
    if sys.implementation.name != "cpython" or kind.__itemsize__:
        return kind, None
    name_at = ctypes.cast(ctypes.c_char_p(_PROBE_NAME), ctypes.c_void_p).value
    for off in range(8, kind.__basicsize__ - 15, 8):
        if read_two_u64(MEMORY, id(cap) + off) == (marker, name_at):
            return kind, off
    return kind, None


# The fast paths for numpy (_module: Function._collect) and PyTorch (_export_torch) read a
# capsule's pointer and name pointer at this offset, where the capsule's type is CAPSULE (so
# the read stays inside a PyCapsule), and take the pointer when the name pointer is the one
# that framework's versioned capsules carry (fast_name, a constant of numpy's; _torch_name);
# anything else goes through PyCapsule_GetPointer, which checks the object and the name and
# raises.
CAPSULE, CAPSULE_POINTER_OFFSET = _capsule_layout()
fast_type = None
fast_name = None


def _export_versioned(obj, stream):
    cap = (obj.__dlpack__(max_version=MAX_VERSION) if stream is None else
           obj.__dlpack__(max_version=MAX_VERSION, stream=stream))
    p = get_pointer(cap, VERSIONED_NAME)
    return cap, p + VERSIONED_TENSOR_OFFSET, p + VERSIONED_FLAGS_OFFSET


def _export_legacy(obj, stream):
    cap = obj.__dlpack__() if stream is None else obj.__dlpack__(stream=stream)
    return cap, get_pointer(cap, LEGACY_NAME), 0


# An export returns (what to keep alive while the memory is read, the DLTensor's address, the
# address of the versioned flags or 0).


_torch_fast = None  # (torch.strided, torch._C._to_dlpack_versioned), found at the first export
_torch_name = None  # the name pointer of PyTorch's versioned capsules, as fast_name for numpy


def _export_torch(obj, stream):
    """PyTorch's: Tensor.__dlpack__ is Python code (1.9 us a tensor on the bench host) that
    checks the tensor, synchronizes CUDA streams (an event a tensor) and ends in a C export
    (0.18 us). Where there is nothing to synchronize, a CPU tensor, or a CUDA tensor launched on
    its own current stream (stream -1, _module: Function._streams), the checks are made here and
    the C export called directly, its pointer read in place as numpy's are; a tensor that fails
    them, or one a launch on another stream must wait for, goes through __dlpack__, which says
    why or synchronizes. The CUDA side is not yet run on a GPU."""
    global _torch_fast, _torch_name
    if _torch_fast is None:
        import torch
        to_dlpack = getattr(torch._C, "_to_dlpack_versioned", None)  # absent: older PyTorch
        _torch_fast = (torch.strided, to_dlpack if hasattr(torch.Tensor, "is_cpu") else None)
    strided, to_dlpack = _torch_fast
    if (to_dlpack is None or not (obj.is_cpu or (stream == -1 and obj.is_cuda)) or
            obj.requires_grad or obj.layout is not strided or obj.is_neg()):
        _refuse_torch_neg(obj)
        return _export_versioned(obj, stream)
    cap = to_dlpack(obj)
    p, name = (read_two_u64(MEMORY, id(cap) + CAPSULE_POINTER_OFFSET)
               if type(cap) is CAPSULE and CAPSULE_POINTER_OFFSET is not None else (0, None))
    if name != _torch_name or name is None:
        p = get_pointer(cap, VERSIONED_NAME)
        if name is not None and _torch_name is None and \
                read_two_u64(MEMORY, id(cap) + CAPSULE_POINTER_OFFSET)[0] == p:
            _torch_name = name  # its capsules keep their pointer there: read it in place
    return cap, p + VERSIONED_TENSOR_OFFSET, p + VERSIONED_FLAGS_OFFSET


def _refuse_torch_neg(obj):
    """Refuses a PyTorch tensor with the negative bit (a lazily negated view: c.conj().imag):
    its memory holds the negation of its values, and DLPack has no flag for that, so that
    PyTorch's own export hands out the memory as it is (read as the values, silently wrong).
    Refused rather than resolved into a copy, as Tensor.numpy() refuses it: the package reads
    arrays in place and writes results into them, and a copy would be silently stale in a
    plan (which reads its arrays' current values at each replay) and lost as an out=. The
    conjugate bit needs no check (_export_torch's fast path checks this bit in its place, at
    no cost): only complex tensors have it, a dtype fusec refuses whatever the bit."""
    if obj.is_neg():
        raise BufferError("the tensor has the negative bit set (a lazily negated view, as "
                          "c.conj().imag gives), whose memory holds the negated values: pass "
                          "t.resolve_neg(), as Tensor.numpy() asks")


def _export_torch_legacy(obj, stream):
    """A PyTorch before DLPack 1.x: __dlpack__, after the negative bit's check."""
    _refuse_torch_neg(obj)
    return _export_legacy(obj, stream)


def _export_numpy(obj, stream):
    """numpy 2.1 and later (DLPack 1.x), off the fast path."""
    if obj.dtype.num < 256:  # a built-in dtype; user-defined ones (bfloat16) number from 256
        return _export_versioned(obj, None)
    return _export_numpy_bf16(obj, _export_versioned)


def _export_numpy_legacy(obj, stream):
    """numpy before 2.1 (DLPack 0.x only)."""
    if not obj.flags.writeable:
        return _export_numpy_read_only(obj)
    if obj.dtype.num < 256:
        return _export_legacy(obj, None)
    return _export_numpy_bf16(obj, _export_legacy)


_NUMPY_CODES = {"b": 6, "i": 0, "u": 1, "f": 2, "c": 5}


def _export_numpy_read_only(obj):
    """A read-only array of a numpy before 2.1, which refuses to export it (DLPack 0.x cannot
    say read-only): described from its __array_interface__ instead, in a DLTensor of our own
    followed by a versioned flags word that says read-only (so that it is read as an input and
    refused as a result), its shape and its strides in elements."""
    nd, size = obj.ndim, obj.dtype.itemsize
    if obj.dtype.name == "bfloat16":
        key = BF16_KEY
    elif obj.dtype.kind in _NUMPY_CODES and obj.dtype.num < 256:
        key = dtype_key(_NUMPY_CODES[obj.dtype.kind], size * 8)
    else:
        raise BufferError("DLPack has no type for numpy's %s" % obj.dtype)
    desc = ctypes.create_string_buffer(56 + 16 * nd)
    at = ctypes.addressof(desc)
    if any(s % size for s in obj.strides):  # as numpy's own export refuses them
        raise BufferError("strides that are not whole elements (%s bytes)" % (obj.strides,))
    strides = [s // size for s in obj.strides]
    struct.pack_into("QQiIQQQQ", desc, 0, obj.__array_interface__["data"][0],
                     device_key(DL_CPU), nd, key, at + 56 if nd else 0,
                     at + 56 + 8 * nd if nd else 0, 0, FLAG_READ_ONLY)
    struct.pack_into("%dq" % (2 * nd), desc, 56, *obj.shape, *strides)
    return (obj, desc), at, at + 48


def _export_numpy_bf16(obj, export):
    """numpy has no DLPack type for ml_dtypes' bfloat16: such an array goes as its bits
    (uint16), described by a copy of the DLTensor with the dtype set to bf16. Other user dtypes
    go as they are, and numpy refuses them."""
    if obj.dtype.name != "bfloat16":
        return export(obj, None)
    cap, at, flags_at = export(obj.view("uint16"), None)
    copy = ctypes.create_string_buffer(bytes(MEMORY[at:at + 48]), 48)
    struct.pack_into("I", copy, 20, BF16_KEY)
    return (cap, copy), ctypes.addressof(copy), flags_at


# ---- frameworks: results made like the first array -------------------------------------------

class _Kind:
    """What fusec learned about one array type: how to export it and to make results."""
    __slots__ = ("export", "alloc", "name")

    def __init__(self, export, alloc, name):
        self.export, self.alloc, self.name = export, alloc, name


_KINDS = {}


def _ml_bfloat16():
    """ml_dtypes' bfloat16 when it is installed, else None."""
    try:
        import ml_dtypes
    except ImportError:
        return None
    return ml_dtypes.bfloat16


_np_dtypes = None
_np_empty = None


def numpy_dtypes():
    """numpy's dtype for each fusec dtype (None for bf16 without ml_dtypes)."""
    global _np_dtypes, _np_empty
    if _np_dtypes is None:
        import numpy as np
        _np_empty = np.empty
        bf16 = _ml_bfloat16()
        _np_dtypes = [np.dtype(np.bool_), np.dtype(np.int32), np.dtype(np.int64),
                      np.dtype(np.float16), np.dtype(bf16) if bf16 is not None else None,
                      np.dtype(np.float32), np.dtype(np.float64)]
    return _np_dtypes


def _alloc_numpy(like, dtype, shape):
    t = (_np_dtypes or numpy_dtypes())[dtype]
    if t is None:
        raise ArgumentError("a bf16 result as a numpy array needs ml_dtypes (pip install "
                            "ml_dtypes); or pass out= with a bf16 array of your own")
    return _np_empty(shape, t)


_torch_table = None


def _alloc_torch(like, dtype, shape):
    global _torch_table
    import torch
    if _torch_table is None:
        _torch_table = [torch.bool, torch.int32, torch.int64, torch.float16, torch.bfloat16,
                        torch.float32, torch.float64]
    return torch.empty(tuple(shape), dtype=_torch_table[dtype], device=like.device)


def _alloc_cupy(like, dtype, shape):
    import cupy
    if dtype == 4:
        raise ArgumentError("CuPy has no bf16: pass out= with a bf16 array of your own")
    with like.device:
        return cupy.empty(shape, numpy_dtypes()[dtype])


def _alloc_other(like, dtype, shape):
    """Any other framework: numpy on the host, else out= is needed."""
    kind, _ = like.__dlpack_device__()
    if kind not in (DL_CPU, DL_CUDA_HOST):
        raise ArgumentError("fusec cannot make results for %s arrays on %s: pass out="
                            % (type(like).__name__, _DEVICE_NAMES.get(kind, kind)))
    return _alloc_numpy(like, dtype, shape)


def _learn(obj):
    """The _Kind of obj's type, found once per type."""
    t = type(obj)
    if not hasattr(obj, "__dlpack__"):
        raise ArgumentError("%s is not an array: fusec takes arrays with __dlpack__ (numpy, "
                            "PyTorch, CuPy, JAX)" % t.__name__)
    root = t.__module__.split(".")[0]
    alloc = {"numpy": _alloc_numpy, "torch": _alloc_torch, "cupy": _alloc_cupy}.get(
        root, _alloc_other)
    versioned = _speaks_versioned(obj)
    if root == "numpy":
        export = _export_numpy if versioned else _export_numpy_legacy
        if versioned and t.__name__ == "ndarray":
            _learn_fast(t)
    elif root == "torch":
        export = _export_torch if versioned else _export_torch_legacy
    else:
        export = _export_versioned if versioned else _export_legacy
    kind = _Kind(export, alloc, root)
    _KINDS[t] = kind
    return kind


def _learn_fast(ndarray):
    """Turns on the fast path for numpy.ndarray: the name pointer of its versioned capsules."""
    global fast_type, fast_name
    if CAPSULE_POINTER_OFFSET is None:
        return
    cap = ndarray((1,), "f4").__dlpack__(max_version=MAX_VERSION)
    if type(cap) is not CAPSULE or _get_name(cap) != VERSIONED_NAME:
        return
    p, name = read_two_u64(MEMORY, id(cap) + CAPSULE_POINTER_OFFSET)
    if p == get_pointer(cap, VERSIONED_NAME):
        fast_name, fast_type = name, ndarray


def _speaks_versioned(obj):
    """Whether obj's __dlpack__ takes max_version and answers with a versioned capsule (older
    PyTorch and numpy refuse the keyword; a producer may answer 1.x with a 0.x capsule)."""
    try:
        cap = obj.__dlpack__(max_version=MAX_VERSION)
    except TypeError:
        return False
    except BufferError:
        return True  # it takes the keyword; this array cannot go (the call will say why)
    # (not a capsule: the export's PyCapsule_GetPointer says so, naming the argument)
    return type(cap) is CAPSULE and _get_name(cap) == VERSIONED_NAME


def kind_of(obj):
    return _KINDS.get(type(obj)) or _learn(obj)
