"""fusec/_module.py: Module, Function and Plan, the objects `fusec.compile` hands out, over the
handles of fusec.h.

A call exports its arrays through DLPack (_dlpack.py), makes the results (unless given out=)
and hands the library the DLTensors themselves (fusec_launch_dlpack), whose fields the library
reads: Python touches only each capsule's pointer (about 0.5 us an array, against 0.9 us when
the package read the DLTensor and wrote a fusec_tensor). Plans are made from fusec_tensors
(_fill), once. Everything a call can work out once is worked out when the Function is made:
the counts, where each result's dims come from, the devices the target reaches. The library
checks every descriptor against the signature; the package checks only what the library
cannot see (a versioned capsule's read-only flag), and when the library refuses a call, reads
the arrays again (_fill) so that what DLPack says is amiss (device, dtype code) is told in the
words of the caller's framework.
"""
import ctypes
import os
import struct
import threading
import warnings
import weakref
from collections import namedtuple

from . import _capi, _dlpack
from ._capi import ArgumentError, Error

Param = namedtuple("Param", "name dtype shape")
Param.__doc__ = """A parameter or result as declared: name (None for a result), dtype ("f32"),
shape (a tuple of ints and symbolic dim names)."""

# struct formats that fill one fusec_tensor (data, dtype, rank, shape[rank], zeros for the
# other dims, strides), one per rank
_PACK = [struct.Struct("Pii%dq%dxP" % (r, 8 * (_capi.MAX_RANK - r))).pack_into
         for r in range(_capi.MAX_RANK + 1)]
_TSIZE = _capi.TENSOR_SIZE
# what the hot path (Function._fill) uses, bound once as module globals
_MAX_RANK = _capi.MAX_RANK
_FUSEC_DTYPE = _dlpack.FUSEC_DTYPE
_VERSIONED = _dlpack.VERSIONED_NAME
_get_pointer = _dlpack.get_pointer
_MEM = _dlpack.MEMORY
_read_tensor = _dlpack.read_tensor
_read_dims = _dlpack.read_dims
_read_two = _dlpack.read_two_u64
_read_u64 = _dlpack.read_u64
_READ_ONLY = _dlpack.FLAG_READ_ONLY
_CAP_OFF = _dlpack.CAPSULE_POINTER_OFFSET
_CAPSULE = _dlpack.CAPSULE
_MAX_VERSION = _dlpack.MAX_VERSION
_TENSOR_OFFSET = _dlpack.VERSIONED_TENSOR_OFFSET
_FLAGS_OFFSET = _dlpack.VERSIONED_FLAGS_OFFSET
_launch = _capi.launch_untyped
_launch_dl = _capi.launch_dlpack_untyped
# a DLTensor's ndim and shape pointer, at its offset 16 (the dtype between them skipped)
_read_nd_shape = struct.Struct("i4xQ").unpack_from
_DL_NDIM_OFFSET = 16
_NO_STREAMS = (None, None)  # the host targets': no stream to launch on or to give DLPack
_plan_launch = _capi.plan_launch_untyped

# the devices each target's memory is on (DLPack device keys); fusec's CUDA backend runs on
# any device (up to 64), each call on its tensors' (in that device's primary context)
_HOST = frozenset(_dlpack.device_key(t) for t in (_dlpack.DL_CPU, _dlpack.DL_CUDA_HOST))
_MAX_GPUS = 64  # the device ids the library takes (runtime/dlpack.h, RT_DL_MAX_DEVICES)
_GPUS = frozenset(_dlpack.device_key(t, i) for t in (_dlpack.DL_CUDA, _dlpack.DL_CUDA_MANAGED)
                  for i in range(_MAX_GPUS))


def _dims_of(src, shapes):
    """A result's shape from its source (_dim_sources, not None) and its inputs' shapes;
    IndexError or TypeError for an input of a rank the signature does not give it."""
    if src[0] == "same":
        return shapes[src[1]]
    return tuple(n if type(n) is int else shapes[n[0]][n[1]] for n in src[1])


def _first_array(arrays):
    """The first of arrays that is an array (has __dlpack__), or None: a Python or numpy number
    given for a rank-0 parameter is no array, so that it neither makes the results nor gives
    the stream (SPEC §3b: "the framework of the first array argument")."""
    for a in arrays:
        if hasattr(a, "__dlpack__"):
            return a
    return None


def _as_tuple(out):
    """out= as a tuple of arrays (() for None)."""
    if out is None:
        return ()
    return out if type(out) is tuple else tuple(out) if type(out) is list else (out,)


def _check(status, module):
    """Raises the error of a failed call on `module`, with its message."""
    if status != _capi.OK:
        raise _capi.error_for(status, _capi.module_message(module).decode(errors="replace"))


# ---- compiling -------------------------------------------------------------------------------

def _options(target, arch, cpu, fuse, fast_math, cache, cache_dir, verbose, device=None):
    if target not in _capi.TARGETS:
        raise ArgumentError("target must be one of %s, not %r" % (", ".join(_capi.TARGETS), target))
    if device is not None and (type(device) is not int or device < 0):
        raise ArgumentError("device must be a CUDA device ordinal (0, 1, ...) or None, not %r"
                            % (device,))
    opt = _capi.Options()
    _capi.options_init(ctypes.byref(opt))
    opt.target = _capi.TARGETS[target]
    opt.arch = arch.encode() if arch else None
    opt.cpu = cpu.encode() if cpu else None
    opt.no_fuse = 0 if fuse else 1
    opt.fast_math = 1 if fast_math else 0
    opt.no_cache = 0 if cache else 1
    opt.cache_dir = os.fsencode(cache_dir) if cache_dir else None
    opt.verbose = 1 if verbose else 0
    opt.device = -1 if device is None else device
    return opt  # the library copies the strings: they need not outlive the compile


def _warn_report(handle):
    """Each "warning: " line of a build's report as a CacheWarning (the only warnings the
    backends report are the cache's, which the command line prints to stderr): a Python
    program sees them as warnings, not in a report it never reads. Pointed at the caller of
    compile() or compile_string()."""
    for line in _capi.module_report(handle).decode(errors="replace").splitlines():
        if line.startswith("warning: "):
            warnings.warn("fusec: " + line[len("warning: "):], _capi.CacheWarning, stacklevel=4)


def _finish_compile(status, handle):
    """The Module of a compile call's result, or its error (the diagnostics first)."""
    if handle.value is None:
        raise _capi.error_for(status, "fusec: out of memory, or an invalid argument")
    h = handle.value
    if status == _capi.OK:
        status = _capi.module_build(h)
        _warn_report(h)
    if status != _capi.OK:
        diag = _capi.module_diagnostics(h).decode(errors="replace")
        msg = _capi.module_message(h).decode(errors="replace")
        _capi.module_free(h)
        err = _capi.error_for(status, (diag + msg) if diag else msg)
        err.diagnostics = diag
        raise err
    return Module(h)


def compile(path, target="auto", *, arch=None, cpu=None, fuse=True, fast_math=False, cache=True,
            cache_dir=None, verbose=False, device=None):
    """Compiles a .fuse file for `target` ("auto": CUDA when a GPU is there, else the CPU;
    "cuda", "cpu", "ref"), builds its kernels (through the disk cache) and returns the Module.
    arch: a CUDA architecture ("sm_90"); cpu: the CPU the CPU target builds for ("x86-64-v3");
    fuse=False: every operation its own kernel; cache=False: no disk cache. device: the CUDA
    device the module runs on only (None: each call on its arrays' device, docs/devices.md)."""
    opt = _options(target, arch, cpu, fuse, fast_math, cache, cache_dir, verbose, device)
    h = ctypes.c_void_p()
    st = _capi.module_compile_file(os.fsencode(path), ctypes.byref(opt), ctypes.byref(h))
    return _finish_compile(st, h)


def compile_string(src, target="auto", *, name="<string>", arch=None, cpu=None, fuse=True,
                   fast_math=False, cache=True, cache_dir=None, verbose=False, device=None):
    """As compile(), for source text; `name` is the file name diagnostics show."""
    data = src.encode() if isinstance(src, str) else bytes(src)
    opt = _options(target, arch, cpu, fuse, fast_math, cache, cache_dir, verbose, device)
    h = ctypes.c_void_p()
    st = _capi.module_compile_string(name.encode(), data, len(data), ctypes.byref(opt),
                                     ctypes.byref(h))
    return _finish_compile(st, h)


# ---- modules ---------------------------------------------------------------------------------

class _Owner:
    """Owns a fusec_module handle: the Module and each of its Functions and Plans hold it, so
    that the module is freed after the last of them (and never by a cycle collection in the
    wrong order: nothing it holds points back)."""

    def __init__(self, handle):
        self.h = handle
        self.target = _capi.TARGET_NAMES[_capi.module_target(handle)]
        self.plans = weakref.WeakSet()

    def handle(self):
        if self.h is None:
            raise Error("the module is closed")
        return self.h

    def close(self):
        if self.h is None:
            return
        for p in list(self.plans):  # a plan must be freed before its module
            p.close()
        h, self.h = self.h, None
        _capi.module_free(h)

    def __del__(self):
        try:
            self.close()
        except Exception:  # interpreter shutdown: the library may be gone already
            pass


class Module:
    """A compiled .fuse source. Its functions are attributes (m.gelu) and items (m["gelu"],
    for a name that is also a method's). Free it with close() or a `with` block, or leave it to
    the garbage collector; its plans are closed with it. On CUDA, freeing a module whose kernels
    ran waits for the device's queued work, so not during a stream capture."""

    def __init__(self, handle):
        self._owner = _Owner(handle)
        self._funcs = {}
        n = _capi.module_num_functions(handle)
        self.functions = tuple(
            _capi.function_name(_capi.module_function_at(handle, i)).decode() for i in range(n))
        self.target = self._owner.target
        self.diagnostics = _capi.module_diagnostics(handle).decode(errors="replace")

    def __getitem__(self, name):
        f = self._funcs.get(name)
        if f is None:
            f = self._funcs[name] = Function(self._owner, self._lookup(name))
            f._module = weakref.ref(self)  # (fusec.torch.op finds the function's gradient)
        return f

    def __getattr__(self, name):
        # only for names that are not attributes: functions, once looked up, become ones
        if name.startswith("__") or "_owner" not in self.__dict__:
            raise AttributeError(name)
        f = self[name]
        self.__dict__[name] = f
        return f

    def __dir__(self):
        return list(super().__dir__()) + list(self.functions)

    def _lookup(self, name):
        h = self._owner.handle()
        f = ctypes.c_void_p()
        _check(_capi.module_function(h, name.encode(), ctypes.byref(f)), h)
        return f.value

    def emit(self, kind="ir"):
        """The module's text of a kind: "ast", "ir", "plan", "cuda", "ptx", "llvm"; "cubin"
        gives bytes."""
        if kind not in _capi.EMITS:
            raise ArgumentError("emit kind must be one of %s" % ", ".join(_capi.EMITS))
        h = self._owner.handle()
        data, size = ctypes.c_void_p(), ctypes.c_size_t()
        _check(_capi.module_emit(h, _capi.EMITS[kind], ctypes.byref(data), ctypes.byref(size)), h)
        try:
            raw = ctypes.string_at(data.value, size.value)
        finally:
            _capi.free(data.value)
        return raw if kind == "cubin" else raw.decode(errors="replace")

    def synchronize(self, stream=None):
        """Waits for the work launched on `stream` (CUDA; None: the default stream); at once on
        the host targets, whose launches return when done."""
        h = self._owner.handle()
        s = None
        if stream is not None:
            for attr in ("cuda_stream", "ptr"):
                stream = getattr(stream, attr, stream)
            s = int(stream) or None
        _check(_capi.synchronize(h, s), h)

    @property
    def report(self):
        """Phase timings and per-kernel reports (compile with verbose=True)."""
        return _capi.module_report(self._owner.handle()).decode(errors="replace")

    def close(self):
        """Frees the module and its plans now; its functions cannot be called after. Not to
        race with calls in other threads."""
        self._owner.close()

    def __enter__(self):
        return self

    def __exit__(self, *exc):
        self.close()

    def __repr__(self):
        state = "closed" if self._owner.h is None else self.target
        return "<fusec.Module %s (%s)>" % (", ".join(self.functions), state)


# ---- functions -------------------------------------------------------------------------------

def _param(info, name=True):
    dims = tuple(info.dims[d] if info.dims[d] >= 0 else info.dim_names[d].decode()
                 for d in range(info.rank))
    return Param(info.name.decode() if name and info.name else None,
                 _capi.DTYPE_NAMES[info.dtype], dims)


def _dim_sources(params, result):
    """Where each dim of a result comes from: ("same", i) when its shape is parameter i's,
    else a tuple with a literal or (parameter, dim) per dim; None when a dim is bound by no
    parameter (then the library computes the shapes)."""
    for i, p in enumerate(params):
        if p.shape == result.shape:
            return ("same", i)
    where = {}
    for i, p in enumerate(params):
        for d, n in enumerate(p.shape):
            if isinstance(n, str):
                where.setdefault(n, (i, d))
    out = []
    for n in result.shape:
        if isinstance(n, str):
            if n not in where:
                return None
            out.append(where[n])
        else:
            out.append(n)
    return ("dims", tuple(out))


class Function:
    """A function of a module: call it on arrays, or make a Plan of it. `params` and
    `results` describe its signature (names, dtypes, shapes)."""

    def __init__(self, owner, handle):
        self._m = owner
        self._h = handle
        self._hp = ctypes.c_void_p(handle)  # as the untyped launch takes it
        self._mh = owner.h
        self.name = _capi.function_name(handle).decode()
        info = _capi.ParamInfo()
        self._np = _capi.function_num_params(handle)
        self._nr = _capi.function_num_results(handle)
        params = []
        for i in range(self._np):
            _capi.function_param(handle, i, ctypes.byref(info))
            params.append(_param(info))
        results = []
        for i in range(self._nr):
            _capi.function_result(handle, i, ctypes.byref(info))
            results.append(_param(info, name=False))
        self.params, self.results = tuple(params), tuple(results)
        self._rdtypes = [_capi.DTYPE_NAMES.index(r.dtype) for r in results]
        self._sources = [_dim_sources(params, r) for r in results]
        self._sources_known = all(src is not None for src in self._sources)
        self._pack_ptrs = struct.Struct("%dP" % (self._np + self._nr)).pack_into
        self._cuda = owner.target == "cuda"
        self._devices = _GPUS if self._cuda else _HOST
        self._tls = threading.local()
        g = _capi.function_grad_of(handle)
        #: for a gradient (`fn d = grad(f)`): f's name, and for each result the index of the
        #: parameter of f it is the gradient with respect to; None and () otherwise
        self.grad_of = g.decode() if g else None
        self.grad_wrt = tuple(_capi.function_grad_wrt(handle, i) for i in range(self._nr)) \
            if g else ()

    @property
    def num_kernels(self):
        """Kernels one launch runs (after fusion)."""
        return _capi.function_num_kernels(self._h)

    def __repr__(self):
        sig = ", ".join("%s: %s%s" % (p.name, p.dtype, list(p.shape)) for p in self.params)
        res = ", ".join("%s%s" % (r.dtype, list(r.shape)) for r in self.results)
        return "<fusec.Function %s(%s) -> (%s)>" % (self.name, sig, res)

    # -- calls --

    def __call__(self, *arrays, out=None, stream=None):
        """Runs the function on arrays (any with __dlpack__), read in place; returns its result,
        or a tuple of them. out=: an array (a tuple for several results) to write into, which
        is returned. stream: a CUDA stream (handle, or an object with .cuda_stream or .ptr) on
        the CUDA target; by default the current stream of the first array's framework. On a
        stream= that is not the framework's current one, the launch waits for the arrays'
        producers (DLPack), but the framework's allocator does not know the stream uses them:
        keep them alive until it is done (PyTorch: Tensor.record_stream)."""
        try:
            ptrs, ptrs_p = self._tls.ptrs
        except AttributeError:
            ptrs, ptrs_p = self._tls.ptrs = self._pointers()
        if self._m.h is None:
            raise Error("the module is closed")
        s, ds = self._streams(arrays or _as_tuple(out), stream) if self._cuda else _NO_STREAMS
        caps, ats = [], []  # the capsules stay alive, and the memory with them, until it returns
        if out is None:
            if len(arrays) != self._np:
                self._count_error(len(arrays), self._nr)
            shapes = []
            self._collect(arrays, 0, caps, ats, ds, shapes)
            results = self._make_results(arrays, shapes, ds)
            if results is None:  # shapes only the library can work out
                return self._call_described(arrays, s, ds)
            self._collect(results, self._np, caps, ats, ds, None)
        else:
            results = (out if type(out) is tuple else tuple(out) if type(out) is list else
                       (out,))
            if len(arrays) != self._np or len(results) != self._nr:
                self._count_error(len(arrays), len(results))
            self._collect(arrays + results, 0, caps, ats, ds, None)  # one pass: fewer calls
        self._pack_ptrs(ptrs, 0, *ats)
        st = _launch_dl(self._hp, ptrs_p, self._np, self._nr, s)
        if st:
            self._refused(st, arrays + tuple(results), ds)
        if out is not None:
            return out
        return results[0] if self._nr == 1 else tuple(results)

    def _call_described(self, arrays, s, ds):
        """A call with results made here whose shapes the library computes: the descriptors
        written as fusec_tensors (_fill), then fusec_launch."""
        try:
            buf, at, ins_p, outs_p = self._tls.buf
        except AttributeError:
            buf, at, ins_p, outs_p = self._tls.buf = self._buffer()
        caps = []
        results = self._bind_new(arrays, buf, at, caps, ds)
        st = _launch(self._hp, ins_p, self._np, outs_p, self._nr, s)
        if st:
            _check(st, self._mh)
        return results[0] if self._nr == 1 else tuple(results)

    def plan(self, *arrays, out=None, stream=None):
        """A Plan of the function bound to these arrays (and to out=, else to results made
        here): p() runs it, p.rebind(...) points it at other arrays of the same shapes."""
        return Plan(self, arrays, out, stream)

    def _buffer(self):
        """The descriptors of a call (its inputs, then its results), their address, and
        pointers to the inputs' and the results' as the untyped launch takes them: one per
        thread for calls, one per plan."""
        buf = (_capi.Tensor * max(self._np + self._nr, 1))()
        at = ctypes.addressof(buf)
        return buf, at, ctypes.c_void_p(at), ctypes.c_void_p(at + self._np * _TSIZE)

    def _pointers(self):
        """The DLTensor pointers of a call (its inputs, then its results) as the untyped
        fusec_launch_dlpack takes them, and their address: one per thread."""
        ptrs = (ctypes.c_void_p * max(self._np + self._nr, 1))()
        return ptrs, ctypes.c_void_p(ctypes.addressof(ptrs))

    def _collect(self, arrays, first, caps, ats, stream, shapes):
        """Appends the address of each array's DLTensor to ats (index `first` on: an index
        from self._np on is a result, which must not be read-only) and its capsule to caps;
        with `shapes`, each shape as DLPack gives it (None for a rank fusec has not). The hot
        loop of a call: a numpy array's capsule is read in place (_dlpack: fast_type),
        anything else through its type's export; the library reads the DLTensors."""
        np_ = self._np
        fast = _dlpack.fast_type
        for i, a in enumerate(arrays, first):
            if type(a) is fast and a.dtype.num < 256:
                cap = a.__dlpack__(max_version=_MAX_VERSION)
                # (numpy's capsule is always a PyCapsule; checked all the same, for 0.02 us,
                # since a read of anything else could fault: _dlpack, "Safety")
                p, name = (_read_two(_MEM, id(cap) + _CAP_OFF) if type(cap) is _CAPSULE else
                           (0, None))
                if name != _dlpack.fast_name:
                    p = _get_pointer(cap, _VERSIONED)
                at = p + _TENSOR_OFFSET
                flags_at = p + _FLAGS_OFFSET
            else:
                kind = _dlpack._KINDS.get(type(a))
                if kind is None:
                    a = self._scalar(a, i)
                    kind = self._learn(a, i)
                cap, at, flags_at = self._export(kind, a, i, stream)
            caps.append(cap)
            if i >= np_ and flags_at and _read_u64(_MEM, flags_at)[0] & _READ_ONLY:
                raise ArgumentError("%s: the array is read-only" % self._arg_name(i))
            ats.append(at)
            if shapes is not None:
                nd, shape_at = _read_nd_shape(_MEM, at + _DL_NDIM_OFFSET)
                # a rank fusec has not, or no shape to read (the library refuses both): None
                shapes.append(_read_dims[nd](_MEM, shape_at)
                              if 0 <= nd <= _MAX_RANK and (shape_at or not nd) else None)

    def _make_results(self, arrays, shapes, stream):
        """The results of a call, made by the framework of the first array in the shapes the
        inputs give; None when only the library can work those out (a dim no parameter
        binds, an input of the wrong rank: its message then says which)."""
        if not self._nr:
            return ()
        if not arrays:
            raise ArgumentError("'%s' has no array parameter to make its results like: pass "
                                "out=" % self.name)
        if not self._sources_known:
            return None
        like = arrays[0]
        kind = _dlpack._KINDS.get(type(like))  # (every array's type is known after _collect)
        results = []
        try:
            if kind is None:  # a number for a rank-0 parameter
                like = self._like(arrays)
                kind = _dlpack.kind_of(like)
            alloc = kind.alloc
            for k, src in enumerate(self._sources):  # (a loop: a comprehension costs more)
                dims = _dims_of(src, shapes)
                if dims is None:
                    return None
                results.append(alloc(like, self._rdtypes[k], dims))
        except (IndexError, TypeError):
            return None
        except ArgumentError:
            self._check_arrays(arrays, stream)  # an input fusec cannot take: that first
            raise
        return results

    def _refused(self, st, arrays, stream):
        """Raises the error of a call the library refused: the package's own where what
        DLPack says is amiss, else the library's."""
        self._check_arrays(arrays, stream)
        _check(st, self._mh)

    def _check_arrays(self, arrays, stream):
        """Raises the package's message for an array whose DLPack description fusec cannot
        take (dtype code, device, rank, in the words of the caller's framework), reading the
        arrays again as _fill does."""
        try:
            buf = self._tls.buf[0]
        except AttributeError:
            self._tls.buf = self._buffer()
            buf = self._tls.buf[0]
        self._fill(arrays, buf, 0, [], stream)

    def _bind(self, arrays, out, buf, at, caps, stream):
        """Writes the descriptors of arrays and of out (made here when None) into buf, keeping
        their capsules in caps; returns the results as a tuple or list."""
        if out is None:
            return self._bind_new(arrays, buf, at, caps, stream)
        results = _as_tuple(out)
        if len(arrays) != self._np or len(results) != self._nr:
            self._count_error(len(arrays), len(results))
        self._fill(arrays + results, buf, 0, caps, stream)
        return results

    def _bind_new(self, arrays, buf, at, caps, stream):
        """As _bind, with results made here, by the framework of the first array."""
        if len(arrays) != self._np:
            self._count_error(len(arrays), self._nr)
        shapes = self._fill(arrays, buf, 0, caps, stream)
        if not self._nr:
            return ()
        if not arrays:
            raise ArgumentError("'%s' has no array parameter to make its results like: pass "
                                "out=" % self.name)
        like = self._like(arrays)
        alloc = _dlpack.kind_of(like).alloc
        results = [alloc(like, self._rdtypes[k], self._result_shape(k, src, shapes, at))
                   for k, src in enumerate(self._sources)]
        self._fill(results, buf, self._np, caps, stream)
        return results

    def _fill(self, arrays, buf, first, caps, stream):
        """Writes the fusec_tensor descriptors of arrays into buf from index `first` on (an
        index from self._np on is a result, which must be writable), keeping their capsules
        in caps; returns their shapes. For plans, and to say what DLPack gives that fusec
        cannot take, in the words of the caller's framework (a call's own path is _collect)."""
        ats = []
        self._collect(arrays, first, caps, ats, stream, None)
        shapes = []
        devices = self._devices
        for i, at in enumerate(ats, first):
            data, device, nd, dtype, shape_at, strides_at, offset = _read_tensor(_MEM, at)
            dt = _FUSEC_DTYPE.get(dtype)
            if (dt is None or not 0 <= nd <= _MAX_RANK or device not in devices or
                    (nd and not shape_at)):
                raise self._array_error(i, nd, dtype, device, dt)
            shape = _read_dims[nd](_MEM, shape_at)
            # DLPack's strides are fusec's (int64 elements), in the capsule's memory that caps
            # keeps for the call: the library reads them in place (NULL: dense)
            _PACK[nd](buf, i * _TSIZE, data + offset, dt, nd, *shape, strides_at or 0)
            shapes.append(shape)
        return shapes

    def _result_shape(self, k, src, shapes, at):
        try:
            if src is not None:
                return _dims_of(src, shapes)
        except IndexError:  # an input of the wrong rank: the library says which
            pass
        return self._library_shapes(at)[k]

    def _library_shapes(self, at):
        res = (_capi.Tensor * max(self._nr, 1))()
        _check(_capi.function_result_shapes(self._h, at, self._np, ctypes.addressof(res),
                                            self._nr), self._mh)
        return [tuple(r.shape[:r.rank]) for r in res[:self._nr]]

    def _streams(self, arrays, stream):
        """The CUDA stream of a call on the CUDA target, as fusec_launch takes it (a c_void_p,
        None for the default stream) and as __dlpack__ takes it (an int; 1 is the legacy
        default stream, -1 no synchronization). It is stream= (a handle, or an object with
        .cuda_stream (PyTorch) or .ptr (CuPy)), else the current stream of the first array's
        framework, else the default stream. A PyTorch stream found here is the tensors' own
        current stream, so their export needs no synchronization (-1), which saves PyTorch an
        event per tensor. Not yet run on a GPU."""
        own = False
        a = _first_array(arrays) if stream is None else None
        if a is not None:
            root = type(a).__module__.split(".")[0]
            if root == "torch" and a.is_cuda:
                import torch
                raw = getattr(torch._C, "_cuda_getCurrentRawStream", None)
                stream = raw(a.get_device()) if raw else torch.cuda.current_stream(a.device)
                own = True
            elif root == "cupy":
                import cupy
                stream = cupy.cuda.get_current_stream()
        for attr in ("cuda_stream", "ptr"):
            stream = getattr(stream, attr, stream)
        h = int(stream or 0)
        return (ctypes.c_void_p(h) if h else None), (-1 if own else h or 1)

    def _like(self, arrays):
        """The array whose framework makes a call's results: the first array argument, else
        (every argument a number) the first as the 0-d numpy array it is read as."""
        a = _first_array(arrays)
        return self._scalar(arrays[0], 0) if a is None else a

    def _learn(self, a, i):
        try:
            return _dlpack.kind_of(a)
        except ArgumentError as e:
            raise ArgumentError("%s: %s" % (self._arg_name(i), e.message)) from None

    def _export(self, kind, a, i, stream):
        """kind.export(a), with the framework's refusal (a tensor that requires grad, a dtype
        DLPack has no code for) as an ArgumentError naming the argument."""
        try:
            return kind.export(a, stream)
        except (AssertionError, BufferError, RuntimeError, TypeError, ValueError) as e:
            raise ArgumentError("%s: the %s array cannot be read through DLPack: %s"
                                % (self._arg_name(i), kind.name, e)) from None

    def _scalar(self, a, i):
        """A Python or numpy number for a rank-0 parameter, as a 0-d numpy array of the
        parameter's dtype (a copy of one element); anything else as it is."""
        if i >= self._np or self.params[i].shape or hasattr(a, "__dlpack__"):
            return a
        if not isinstance(a, (bool, int, float)) and type(a).__module__ != "numpy":
            return a
        import numpy
        t = _dlpack.numpy_dtypes()[_capi.DTYPE_NAMES.index(self.params[i].dtype)]
        if t is None:
            raise ArgumentError("%s: a bf16 number needs ml_dtypes (pip install ml_dtypes)"
                                % self._arg_name(i))
        return numpy.asarray(a, dtype=t)

    # -- errors --

    def _arg_name(self, i):
        """The name of argument i (the inputs, then the results) as the library's messages
        give it."""
        if i < self._np:
            return "parameter '%s'" % self.params[i].name
        return "result %d" % (i - self._np)

    def _array_error(self, i, nd, dtype, device, dt):
        what = self._arg_name(i)
        if dt is None:
            return ArgumentError("%s: dtype %s is not one fusec takes (%s)" % (
                what, _dlpack.dtype_name(dtype), ", ".join(_capi.DTYPE_NAMES)))
        if not 0 <= nd <= _MAX_RANK:
            return ArgumentError("%s: rank %d is not one fusec takes (0 to %d)"
                                 % (what, nd, _MAX_RANK))
        if device not in self._devices:
            reach = "CUDA devices 0 to %d" % (_MAX_GPUS - 1) if self._cuda else "host memory"
            return ArgumentError("%s: the array is on %s, which the module's target (%s) cannot "
                                 "reach: it runs on %s" % (what, _dlpack.device_name(device),
                                                           self._m.target, reach))
        # the one thing left that _fill refuses: a rank without a shape pointer (a producer's
        # bug, which the library refuses too; reading it would fault)
        return ArgumentError("%s: the DLPack tensor has rank %d and no shape (a NULL shape "
                             "pointer)" % (what, nd))

    def _count_error(self, ninputs, nresults):
        """Raises the library's message for a call with these counts (it checks them before it
        reads any descriptor, so empty ones do), naming the parameters missing from a short
        call: a gradient's cotangents (dy) are the ones a caller forgets."""
        ins = (_capi.Tensor * max(ninputs, 1))()
        outs = (_capi.Tensor * max(nresults, 1))()
        st = _capi.launch(self._h, ctypes.addressof(ins), ninputs, ctypes.addressof(outs),
                          nresults, None)
        st = st if st != _capi.OK else _capi.ERR_INVALID_ARGUMENT
        msg = _capi.module_message(self._mh).decode(errors="replace")
        if 0 <= ninputs < self._np and msg.endswith("got %d" % ninputs):
            missing = [p.name for p in self.params[ninputs:]]
            msg += ": missing %s" % ", ".join("'%s'" % n for n in missing)
            msg += self._cotangents_told(missing)
        raise _capi.error_for(st, msg)

    def _cotangents_told(self, missing):
        """For a gradient (`fn d = grad(f)`) whose cotangents are among the missing
        parameters: what they are; else ""."""
        module = getattr(self, "_module", lambda: None)()
        if self.grad_of is None or module is None or self.grad_of not in module.functions:
            return ""
        f = module[self.grad_of]
        cot = [p.name for p in self.params[len(f.params):]]
        if not set(cot) & set(missing):
            return ""
        what = ("the gradient of the loss with respect to %s's result" if len(cot) == 1 else
                "the gradients of the loss with respect to %s's results, one a result") % f.name
        return (" (%s = grad(%s) takes %s's parameters, then %s: %s, of that result's shape "
                "and dtype, as PyTorch's backward passes it)"
                % (self.name, f.name, f.name, ", ".join("'%s'" % n for n in cot), what))


# ---- plans -----------------------------------------------------------------------------------

class Plan:
    """A function bound to fixed arrays (on CUDA one CUDA graph): p() runs it and returns its
    results (the out= arrays, or those the plan made); p.rebind(*arrays, out=...) points it at
    other arrays of the same shapes. The plan holds the arrays' DLPack capsules, and so their
    memory, until it is rebound or closed."""

    def __init__(self, fn, arrays, out, stream):
        self._fn = fn
        self._h = None
        self._stream, self._dl_stream = (fn._streams(arrays or _as_tuple(out), stream)
                                         if fn._cuda else _NO_STREAMS)
        # without stream=, each call runs on the current stream of the first array's framework
        # then (a side stream, a torch.cuda.graph capture), as a call does
        self._follow = fn._cuda and stream is None
        self._like = tuple(arrays) + _as_tuple(out)  # (_streams takes the first array)
        at, caps, results = self._bind(arrays, out)
        h = ctypes.c_void_p()
        _check(_capi.plan_create(fn._h, at, fn._np, at + fn._np * _TSIZE, fn._nr, self._stream,
                                 ctypes.byref(h)), fn._mh)
        self._h, self._caps, self._results = h.value, caps, results
        self._hp = h  # as the untyped plan launch takes it
        fn._m.plans.add(self)

    def _bind(self, arrays, out):
        """The descriptors of arrays and out (made when None), their address, the capsules
        that keep them, and the results. The library copies the descriptors: buf may go once
        the plan call returns."""
        fn = self._fn
        if fn._m.h is None:
            raise Error("the module is closed")
        self._buf = fn._buffer()
        buf, at = self._buf[:2]
        caps = []
        results = fn._bind(arrays, out, buf, at, caps, self._dl_stream)
        return at, caps, list(results)

    @property
    def out(self):
        """The result arrays the plan writes: one, or a tuple."""
        return self._results[0] if len(self._results) == 1 else tuple(self._results)

    def __call__(self, stream=None):
        """Runs the plan; returns its results. On CUDA it runs on `stream`, else on the one
        given when the plan was made, else on the current stream of its first array's
        framework (as a call does)."""
        if self._h is None:
            raise Error("the plan is closed")
        if stream is not None:
            s = self._fn._streams((), stream)[0]
        else:
            s = self._fn._streams(self._like, None)[0] if self._follow else self._stream
        st = _plan_launch(self._hp, s)
        if st:
            _check(st, self._fn._mh)
        return self._results[0] if len(self._results) == 1 else tuple(self._results)

    def rebind(self, *arrays, out=None):
        """Points the plan at other arrays of the same shapes and dtypes (and at out=, else at
        new results); a launch already made is not affected."""
        if self._h is None:
            raise Error("the plan is closed")
        fn = self._fn
        at, caps, results = self._bind(arrays, out)
        _check(_capi.plan_rebind(self._h, at, fn._np, at + fn._np * _TSIZE, fn._nr), fn._mh)
        self._caps, self._results = caps, results  # the old capsules go: their deleters run
        return self

    def close(self):
        """Frees the plan and lets its arrays go; on CUDA also during a stream capture (as the
        garbage collector may), nothing being waited for. A plan called inside a capture must
        outlive the captured graph's replays."""
        h, self._h = self._h, None
        # after its module, fusec_plan_free would touch freed memory: such a plan is left
        # (only a garbage cycle finalized in the wrong order frees the module first, since the
        # plan holds it)
        if h is not None and self._fn._m.h is not None:
            _capi.plan_free(h)
        self._caps = []

    def __enter__(self):
        return self

    def __exit__(self, *exc):
        self.close()

    def __del__(self):
        try:
            self.close()
        except Exception:
            pass
