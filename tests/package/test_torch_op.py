"""tests/package/test_torch_op.py: fusec.torch.op (SPEC §3b): fusec functions as PyTorch custom
operators. Against PyTorch's own operators: forward values, and gradients through the
operator's backward, which runs the module's `fn d = grad(f)` (every float parameter, or the
wrt subset a gradient declares, the others None); torch.library.opcheck (schema, fake
implementation, autograd registration, AOT dispatch); torch.compile(fullgraph=True) tracing
through it, forward and backward; several results, one of them an integer; double backward
through a declared gradient of the gradient, and the error that names the declaration where
there is none; a name registered twice. Run by ctest (package.torch_op) on the CPU target;
skipped (77) without PyTorch."""
import os
import sys
import warnings

HERE = os.path.dirname(os.path.abspath(__file__))
sys.path.insert(0, os.path.join(HERE, "..", "cli_py"))
from fusectest import check, finish  # noqa: E402  (exits 77 without numpy)

try:
    import torch
except ImportError:
    print("PyTorch is not installed: skipping")
    sys.exit(77)

import fusec  # noqa: E402
import fusec.torch  # noqa: E402

SRC = os.environ.get("FUSEC_SRC", os.path.join(HERE, "..", ".."))
F = torch.nn.functional
m = fusec.compile(os.path.join(SRC, "tests", "programs", "grad.fuse"), target="cpu")
torch.manual_seed(7)


def close(a, b, tol=1e-5):
    return a is not None and b is not None and torch.allclose(a, b, rtol=tol, atol=tol)


def gelu_ref(x):
    return 0.5 * x * (1.0 + torch.tanh(0.7978845608028654 * (x + 0.044715 * x * x * x)))


# GELU: forward, and backward through m.dgelu (found in the module)
check(m.dgelu.grad_of == "gelu" and m.dgelu.grad_wrt == (0,), "m.dgelu describes its gradient")
check(m.dlayernorm_x.grad_wrt == (0,) and m.dlayernorm.grad_wrt == (0, 1, 2),
      "grad_wrt: the parameters each result is the gradient of")
check(m.gelu.grad_of is None and m.gelu.grad_wrt == (), "a function that is no gradient")
gelu = fusec.torch.op(m.gelu, "fusectest::gelu")
x = torch.randn(1001, requires_grad=True)
y = gelu(x)
x2 = x.detach().clone().requires_grad_(True)
y2 = gelu_ref(x2)
dy = torch.randn_like(y)
y.backward(dy)
y2.backward(dy)
check(close(y, y2) and close(x.grad, x2.grad), "gelu: values and gradient against PyTorch's")

# layernorm: three parameters, each with its gradient
ln = fusec.torch.op(m.layernorm, "fusectest::layernorm")
ts = [torch.randn(s, requires_grad=True) for s in ((9, 33), (33,), (33,))]
refs = [t.detach().clone().requires_grad_(True) for t in ts]
out = ln(*ts)
ref = F.layer_norm(refs[0], (33,), refs[1], refs[2], 1e-5)
g = torch.randn_like(out)
out.backward(g)
ref.backward(g)
check(close(out, ref), "layernorm: values")
for n, a, b in zip("xwb", ts, refs):
    check(close(a.grad, b.grad, 1e-4), "layernorm: d/d%s against PyTorch's" % n)

# a gradient with respect to some parameters only: the others get none
ln_x = fusec.torch.op(m.layernorm, "fusectest::layernorm_x", grad=m.dlayernorm_x)
ts = [torch.randn(s, requires_grad=True) for s in ((4, 16), (16,), (16,))]
ln_x(*ts).sum().backward()
check(ts[0].grad is not None and ts[1].grad is None and ts[2].grad is None,
      "grad=m.dlayernorm_x: x gets a gradient, w and b none")
try:
    fusec.torch.op(m.layernorm, "fusectest::bad", grad=m.dgelu)
    check(False, "grad= of another function: no error")
except fusec.ArgumentError as e:
    check("no gradient of layernorm" in str(e), "grad= of another function: %s" % e)

# several results, one an integer (its cotangent is zeros, ignored)
stats = fusec.torch.op(m.stats, "fusectest::stats")
xs = torch.randn(5, 7, requires_grad=True)
s = torch.tensor(1.5, requires_grad=True)
a, count, sq = stats(xs, s)
check(count.dtype == torch.int64 and torch.equal(count, (xs > 0).sum(1, keepdim=True)),
      "stats: the integer result")
(a.sum() + sq.sum()).backward()
check(close(xs.grad, s.detach() + 2 * xs.detach()) and close(s.grad, xs.detach().sum()),
      "stats: gradients through several results")

# double backward: the backward operator's own backward is the module's gradient of the
# gradient (`fn d2gelu = grad(dgelu, wrt=(x))`), against PyTorch's of the same formula
x = torch.randn(300, dtype=torch.float32, requires_grad=True)
x2 = x.detach().clone().requires_grad_(True)
try:
    (gx,) = torch.autograd.grad(gelu(x).sum(), x, create_graph=True)
    (gx2,) = torch.autograd.grad(gelu_ref(x2).sum(), x2, create_graph=True)
    gx.square().sum().backward()
    gx2.square().sum().backward()
    check(close(x.grad, x2.grad, 1e-4), "double backward through gelu: d2gelu")
except RuntimeError as e:
    check(False, "double backward through gelu: %s" % e)
# without a declared gradient of the gradient, the error says which declaration gives one
sm = fusec.torch.op(m.softmax, "fusectest::softmax")
xs = torch.randn(3, 8, requires_grad=True)
(gx,) = torch.autograd.grad(sm(xs)[:, 0].sum(), xs, create_graph=True)
try:
    gx.sum().backward()
    check(False, "double backward through softmax, of no d2softmax: no error")
except RuntimeError as e:
    check("fn d2softmax = grad(dsoftmax);" in str(e) and "fusectest::softmax_backward" in str(e),
          "double backward through softmax, of no d2softmax: %s" % e)
# nor has an operator of a function with no gradient any backward: it says what to declare
mg = fusec.compile_string("fn sq(x: f32[N]) -> f32[N] { return x * x; }", target="cpu")
sq = fusec.torch.op(mg.sq, "fusectest::sq")
xq = torch.randn(5, requires_grad=True)
try:
    sq(xq).sum().backward()
    check(False, "backward through an operator of no gradient: no error")
except RuntimeError as e:
    check("fn dsq = grad(sq);" in str(e), "backward through an operator of no gradient: %s" % e)

# a name registered twice: the same function again gives the same operator; another function
# replaces it with a warning (the old operator object runs the new function, as PyTorch does)
with warnings.catch_warnings(record=True) as got:
    warnings.simplefilter("always")
    first = fusec.torch.op(m.gelu, "fusectest::twice")
    again = fusec.torch.op(m.gelu, "fusectest::twice")
    check(again is first and not got, "the same function under its name again: the same op, "
          "no warning (%s)" % [str(w.message) for w in got])
    other = fusec.torch.op(m.logsumexp, "fusectest::twice")
ws = [w for w in got if issubclass(w.category, UserWarning)]
check(len(ws) == 1 and "fusectest::twice was registered for gelu; it now runs logsumexp" in
      str(ws[0].message) and ws[0].filename == os.path.abspath(__file__),
      "another function under a used name warns: %s" % [(str(w.message), w.filename)
                                                        for w in got])
xt = torch.randn(2, 5)
check(close(other(xt), torch.logsumexp(xt, 1, keepdim=True)), "the new operator runs logsumexp")

# torch.library's own checks of each operator
opcheck = torch.library.opcheck
for op, args in ((torch.ops.fusectest.gelu.default, (torch.randn(17, requires_grad=True),)),
                 (torch.ops.fusectest.layernorm.default,
                  tuple(torch.randn(sh, requires_grad=True) for sh in ((3, 16), (16,), (16,)))),
                 (torch.ops.fusectest.stats.default,
                  (torch.randn(4, 6, requires_grad=True), torch.tensor(2.0, requires_grad=True)))):
    res = opcheck(op, args)
    check(all(v == "SUCCESS" for v in res.values()), "opcheck %s: %s" % (op, res))

# torch.compile traces through the operator, forward and backward
xs = torch.randn(6, 33, requires_grad=True)
w = torch.randn(33, requires_grad=True)
b = torch.randn(33, requires_grad=True)


def model(x, w, b):
    return (ln(x, w, b).relu() * gelu(x.reshape(-1)).reshape(x.shape)).sum()


loss = torch.compile(model, fullgraph=True)(xs, w, b)
loss.backward()
eager = [t.detach().clone().requires_grad_(True) for t in (xs, w, b)]
model(*eager).backward()
check(close(loss, model(*eager).detach(), 1e-4), "torch.compile: the loss")
for n, a, e in zip("xwb", (xs, w, b), eager):
    check(close(a.grad, e.grad, 1e-4), "torch.compile: d/d%s as in eager" % n)
finish()
