"""tests/package/dlpack_producer.py: arrays whose __dlpack__ is made by hand with ctypes, for
the package's tests: numpy memory described as any device, dtype code, strides and read-only
flag, as a DLPack 1.x (versioned) or 0.x (legacy) producer, counting the deleter's calls. Their
capsules behave as every producer's: the capsule's destructor calls the deleter unless a
consumer renamed the capsule to "used_dltensor[_versioned]" (and then took on calling it)."""
import ctypes

PyCapsule_New = ctypes.pythonapi["PyCapsule_New"]
PyCapsule_New.restype = ctypes.py_object
PyCapsule_New.argtypes = [ctypes.c_void_p, ctypes.c_char_p, ctypes.c_void_p]
PyCapsule_IsValid = ctypes.pythonapi["PyCapsule_IsValid"]
PyCapsule_IsValid.restype = ctypes.c_int
PyCapsule_IsValid.argtypes = [ctypes.c_void_p, ctypes.c_char_p]
PyCapsule_GetPointer = ctypes.pythonapi["PyCapsule_GetPointer"]
PyCapsule_GetPointer.restype = ctypes.c_void_p
PyCapsule_GetPointer.argtypes = [ctypes.c_void_p, ctypes.c_char_p]

# capsule names must outlive their capsules: module constants
VERSIONED = b"dltensor_versioned"
LEGACY = b"dltensor"


class DLTensor(ctypes.Structure):
    _fields_ = [("data", ctypes.c_void_p), ("device_type", ctypes.c_int32),
                ("device_id", ctypes.c_int32), ("ndim", ctypes.c_int32),
                ("code", ctypes.c_uint8), ("bits", ctypes.c_uint8), ("lanes", ctypes.c_uint16),
                ("shape", ctypes.POINTER(ctypes.c_int64)),
                ("strides", ctypes.POINTER(ctypes.c_int64)), ("byte_offset", ctypes.c_uint64)]


DELETER = ctypes.CFUNCTYPE(None, ctypes.c_void_p)


class Managed(ctypes.Structure):
    _fields_ = [("dl_tensor", DLTensor), ("manager_ctx", ctypes.c_void_p), ("deleter", DELETER)]


class ManagedVersioned(ctypes.Structure):
    _fields_ = [("major", ctypes.c_uint32), ("minor", ctypes.c_uint32),
                ("manager_ctx", ctypes.c_void_p), ("deleter", DELETER),
                ("flags", ctypes.c_uint64), ("dl_tensor", DLTensor)]


NUMPY_CODES = {"b": 6, "i": 0, "u": 1, "f": 2, "c": 5}


class Producer:
    """A numpy array exported by hand. device: (DLPack device type, id); code/bits: the DLPack
    dtype (default: numpy's); strides: in elements, or None for none given; read_only: the
    versioned flag; null_shape: a NULL shape pointer whatever the rank (a broken producer's).
    `exported` and `deleted` count capsules made and deleters run."""
    versioned = True

    def __init__(self, arr, device=(1, 0), code=None, bits=None, strides=None,
                 read_only=False, null_shape=False):
        self.arr, self.device, self.read_only = arr, device, read_only
        self.null_shape = null_shape
        self.code = NUMPY_CODES[arr.dtype.kind] if code is None else code
        self.bits = arr.dtype.itemsize * 8 if bits is None else bits
        self.strides = strides
        self.exported = self.deleted = 0
        self._live = {}  # address of a managed tensor -> what keeps its memory
        self._deleter = DELETER(self._delete)
        self._destructor = DELETER(self._destroy)

    def __dlpack_device__(self):
        return self.device

    def __dlpack__(self, stream=None, max_version=None, dl_device=None, copy=None):
        if max_version is not None and not self.versioned:
            raise TypeError("__dlpack__() got an unexpected keyword argument 'max_version'")
        m = ManagedVersioned() if self.versioned and max_version else Managed()
        shape = (ctypes.c_int64 * max(self.arr.ndim, 1))(*self.arr.shape)
        strides = None
        if self.strides is not None:
            strides = (ctypes.c_int64 * max(self.arr.ndim, 1))(*self.strides)
        t = m.dl_tensor
        t.data = self.arr.ctypes.data
        t.device_type, t.device_id = self.device
        t.ndim, t.code, t.bits, t.lanes = self.arr.ndim, self.code, self.bits, 1
        if not self.null_shape:
            t.shape = shape
        if strides is not None:
            t.strides = strides
        m.deleter = self._deleter
        name = LEGACY
        if isinstance(m, ManagedVersioned):
            m.major, m.minor, m.flags, name = 1, 0, 1 if self.read_only else 0, VERSIONED
        self._live[ctypes.addressof(m)] = (m, shape, strides, name)
        self.exported += 1
        return PyCapsule_New(ctypes.addressof(m), name,
                             ctypes.cast(self._destructor, ctypes.c_void_p))

    def _destroy(self, capsule):
        # what producers do: an unconsumed capsule's destructor calls the deleter
        for name in (VERSIONED, LEGACY):
            if PyCapsule_IsValid(capsule, name):
                managed = PyCapsule_GetPointer(capsule, name)
                self._live[managed][0].deleter(managed)

    def _delete(self, managed):
        self._live.pop(managed)
        self.deleted += 1

    @property
    def outstanding(self):
        return self.exported - self.deleted


class LegacyProducer(Producer):
    """A DLPack 0.x producer: __dlpack__ takes no max_version."""
    versioned = False
