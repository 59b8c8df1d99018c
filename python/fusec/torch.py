"""fusec/torch.py: fusec functions as PyTorch custom operators (SPEC §3b).

    import fusec, fusec.torch
    m = fusec.compile_string(SOURCE)          # declares gelu, and `fn dgelu = grad(gelu);`
    gelu = fusec.torch.op(m.gelu, "mylib::gelu")
    y = gelu(x)                               # a torch.library operator: torch.compile
    y.sum().backward()                        # traces it; backward runs m.dgelu's kernels

op() registers the function with torch.library.custom_op under its schema (one Tensor per
parameter, one per result), with a fake implementation that gives each result's shape from
the parameters' by the function's declared dims (what torch.compile and CUDA graph capture
need to trace it without running it), and, where the module declares a gradient of the
function (`fn d = grad(f)`, or grad= given), that gradient as the operator's backward: it is
registered as an operator too (NAME_backward), so a compiled graph's backward calls it.
Parameters fusec differentiates get their gradient; the others (integers, and floats outside
the gradient's wrt) get None. Results are made by PyTorch, on the first argument's device.
The backward operator is made by op() in turn, so that a gradient of the gradient declared in
the module (`fn d2 = grad(d)`) is its backward (double backward); a backward through an
operator of no declared gradient raises an error that says which declaration to add.

`import fusec` reaches this module as fusec.torch without importing it (fusec/__init__.py):
PyTorch is imported on first use.
"""
import re
import warnings

import torch

from ._capi import ArgumentError

_DTYPES = {"bool": torch.bool, "i32": torch.int32, "i64": torch.int64, "f16": torch.float16,
           "bf16": torch.bfloat16, "f32": torch.float32, "f64": torch.float64}


def _schema(fn):
    params = ", ".join("Tensor %s" % p.name for p in fn.params)
    n = len(fn.results)
    return "(%s) -> %s" % (params, "Tensor" if n == 1 else "(%s)" % ", ".join(["Tensor"] * n))


def _result_shapes(fn, args):
    """Each result's shape from the arguments' (sizes may be torch's symbolic ints)."""
    shapes = [tuple(a.shape) for a in args]
    out = []
    for k, src in enumerate(fn._sources):
        if src is None:
            raise ArgumentError("%s: result %d has a dim no parameter binds" % (fn.name, k))
        if src[0] == "same":
            out.append(shapes[src[1]])
        else:
            out.append(tuple(n if isinstance(n, int) else shapes[n[0]][n[1]] for n in src[1]))
    return out


def _register(fn, name):
    """fn as the operator `name` (its implementation and fake)."""
    nres = len(fn.results)

    def impl(*args):
        # (autograd has done its part by now; DLPack refuses a tensor that requires grad)
        out = fn(*[a.detach() for a in args])
        return out if nres == 1 else tuple(out)

    op = torch.library.custom_op(name, impl, mutates_args=(), schema=_schema(fn))

    def fake(*args):
        dev = args[0].device if args else torch.device("cpu")
        outs = [torch.empty(s, dtype=_DTYPES[r.dtype], device=dev)
                for s, r in zip(_result_shapes(fn, args), fn.results)]
        return outs[0] if nres == 1 else tuple(outs)

    op.register_fake(fake)
    return op


def _find_grad(fn):
    module = getattr(fn, "_module", lambda: None)()
    if module is None:
        return None
    for name in module.functions:
        g = module[name]
        if g.grad_of == fn.name:
            return g
    return None


# name -> (fn, grad, operator): what op() registered under each name in this process
_registered = {}


def op(fn, name, grad=None):
    """Registers fusec function `fn` (m.gelu) as the PyTorch operator `name` ("ns::name"),
    with fusec's gradient of it as its backward: grad= (a function declared
    `fn d = grad(f)`), else the first such gradient of fn in its module, else none.

    A name is one operator: registering the same function (and gradient) under it again
    returns the operator made before; registering another one replaces it, with a UserWarning,
    and every operator object made for that name before then runs the new function, since
    PyTorch dispatches by name."""
    if grad is None:
        grad = _find_grad(fn)
    elif grad.grad_of != fn.name:
        raise ArgumentError("%s is no gradient of %s" % (grad.name, fn.name))
    old = _registered.get(name)
    if old is not None and old[0] is fn and old[1] is grad:
        return old[2]
    if old is not None:
        # Warned, not refused: torch.library.custom_op itself replaces an operator of the same
        # name (so that a notebook cell can be run again), and a refusal would leave no way to
        # redefine it without restarting the interpreter. But PyTorch does it silently, and
        # the earlier operator object then runs the new function: that is said.
        warnings.warn("fusec.torch.op: %s was registered for %s; it now runs %s, and so does "
                      "every operator object made for it before (PyTorch calls operators by "
                      "name): use another name to keep both" % (name, old[0].name, fn.name),
                      UserWarning, stacklevel=2)
    return _op(fn, name, grad)


def _op(fn, name, grad):
    """op() after its checks; the backward operator (NAME_backward) made by it in turn."""
    forward = _register(fn, name)
    _registered[name] = (fn, grad, forward)
    if grad is None:
        forward.register_autograd(_no_backward(fn, name))
        return forward
    backward = _op(grad, name + "_backward", _find_grad(grad))
    nparams, nres = len(fn.params), len(fn.results)

    def setup_context(ctx, inputs, output):
        outs = output if isinstance(output, tuple) else (output,)
        ctx.save_for_backward(*inputs)
        ctx.result_meta = [(o.shape, o.dtype) for o in outs]

    def backward_fn(ctx, *grads):
        inputs = ctx.saved_tensors
        dys = [g if g is not None else torch.zeros(s, dtype=t, device=inputs[0].device)
               for g, (s, t) in zip(grads, ctx.result_meta)]
        dys = [d.to(_DTYPES[r.dtype]) for d, r in zip(dys, fn.results)]
        got = backward(*inputs, *dys)
        got = got if isinstance(got, tuple) else (got,)
        out = [None] * nparams
        for g, p in zip(got, grad.grad_wrt):
            out[p] = g
        return tuple(out)

    forward.register_autograd(backward_fn, setup_context=setup_context)
    return forward


def _grad_name(fn):
    """A name for a gradient of fn to suggest: dgelu for gelu, d2gelu for dgelu, d3gelu for
    d2gelu (the order after a gradient's d)."""
    m = re.fullmatch(r"d(\d*)(.+)", fn.name) if fn.grad_of else None
    if m is None:
        return "d" + fn.name
    return "d%d%s" % (int(m.group(1) or 1) + 1, m.group(2))


def _no_backward(fn, name):
    """The backward of an operator whose function has no gradient in its module: an error
    that says which declaration gives it one. Registered (rather than none) because PyTorch's
    own message ("no autograd formula was registered. Please use register_autograd") names a
    remedy that is fusec's to apply, not the user's."""
    fix = "declare `fn %s = grad(%s);` in the module" % (_grad_name(fn), fn.name)
    if fn.grad_of:
        fix += ", which gives it one (double backward: the gradient of a gradient)"
    else:
        fix += " (or pass fusec.torch.op a gradient of it as grad=)"
    message = ("fusec.torch: the operator %s runs fusec's %s, of which no gradient is declared, "
               "so there is no backward through it: %s" % (name, fn.name, fix))

    def backward(ctx, *grads):
        raise RuntimeError(message)

    return backward
