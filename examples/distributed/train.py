"""examples/distributed/train.py: data-parallel training under torchrun with fusec operators.

    torchrun --standalone --nproc-per-node=2 examples/distributed/train.py [--steps 20]

One process per device (CUDA: rank r on cuda:r, NCCL; without GPUs: the CPU, gloo). Each rank
trains the same small MLP on its own shard of the data, wrapped in DistributedDataParallel,
which averages the gradients across ranks; the activation is a fusec operator (model.fuse's
gelu, with its `grad` as backward) and the optimizer step is examples/adamw.fuse, one fused
kernel updating each parameter and its moments in place. Beside it the same model trains with
PyTorch alone (F.gelu(approximate="tanh"), torch.optim.AdamW) from the same weights and data;
at the end every rank checks that both sets of weights agree, and rank 0 prints the loss.

Nothing here is specific to fusec's device handling: a call runs on the device of its tensors
(docs/devices.md), so rank r's calls run on cuda:r with that device's current stream."""
import argparse
import os
import sys

import torch
import torch.distributed as dist
import torch.nn.functional as F

HERE = os.path.dirname(os.path.abspath(__file__))
import fusec  # noqa: E402
import fusec.torch  # noqa: E402


def mlp(seed, device):
    torch.manual_seed(seed)
    return torch.nn.Sequential(torch.nn.Linear(64, 128), torch.nn.Linear(128, 16)).to(device)


class Fused(torch.nn.Module):
    """The MLP with fusec's GELU between its layers."""

    def __init__(self, layers, gelu):
        super().__init__()
        self.layers, self.gelu = layers, gelu

    def forward(self, x):
        return self.layers[1](self.gelu(self.layers[0](x)))


class Plain(torch.nn.Module):
    def __init__(self, layers):
        super().__init__()
        self.layers = layers

    def forward(self, x):
        return self.layers[1](F.gelu(self.layers[0](x), approximate="tanh"))


class FusecAdamW:
    """torch.optim.AdamW's update (decoupled weight decay, bias-corrected moments) as one
    fusec kernel a parameter (examples/adamw.fuse), updating the parameter and both moments in
    place. The hyper-parameters are 0-d tensors on the parameters' device."""

    def __init__(self, params, module, lr=1e-3, betas=(0.9, 0.999), eps=1e-8,
                 weight_decay=1e-2):
        self.params = list(params)
        self.step_fn = module.adamw
        dev = self.params[0].device
        scalar = lambda v: torch.tensor(float(v), device=dev)  # noqa: E731
        self.hyper = [scalar(v) for v in (lr, betas[0], betas[1], eps, weight_decay)]
        self.m = [torch.zeros_like(p) for p in self.params]
        self.v = [torch.zeros_like(p) for p in self.params]
        self.t = 0

    @torch.no_grad()
    def step(self):
        self.t += 1
        step = torch.tensor(float(self.t), device=self.params[0].device)
        for p, m, v in zip(self.params, self.m, self.v):
            flat = p.detach().view(-1)  # the parameter's storage, without autograd
            self.step_fn(flat, p.grad.view(-1), m.view(-1), v.view(-1), *self.hyper, step,
                         out=(flat, m.view(-1), v.view(-1)))

    def zero_grad(self):
        for p in self.params:
            p.grad = None


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--steps", type=int, default=20)
    ap.add_argument("--batch", type=int, default=32)
    a = ap.parse_args()
    cuda = torch.cuda.is_available()
    rank = int(os.environ.get("RANK", 0))
    local = int(os.environ.get("LOCAL_RANK", 0))
    if cuda:
        torch.cuda.set_device(local)
    device = torch.device("cuda", local) if cuda else torch.device("cpu")
    dist.init_process_group("nccl" if cuda else "gloo")
    target = "cuda" if cuda else "cpu"
    model_fuse = fusec.compile(os.path.join(HERE, "model.fuse"), target=target)
    adamw_fuse = fusec.compile(os.path.join(HERE, "..", "adamw.fuse"), target=target)
    gelu = fusec.torch.op(model_fuse.gelu, "fusec_example::gelu")

    fused = torch.nn.parallel.DistributedDataParallel(Fused(mlp(0, device), gelu))
    plain = torch.nn.parallel.DistributedDataParallel(Plain(mlp(0, device)))
    opt_fused = FusecAdamW(fused.parameters(), adamw_fuse)
    opt_plain = torch.optim.AdamW(plain.parameters(), lr=1e-3, weight_decay=1e-2)

    gen = torch.Generator().manual_seed(100 + rank)  # each rank its own shard
    target_w = torch.randn(64, 16, generator=torch.Generator().manual_seed(1))
    for step in range(a.steps):
        x = torch.randn(a.batch, 64, generator=gen)
        y = torch.tanh(x @ target_w)
        x, y = x.to(device), y.to(device)
        for net, opt in ((fused, opt_fused), (plain, opt_plain)):
            opt.zero_grad()
            loss = F.mse_loss(net(x), y)
            loss.backward()  # DDP averages the gradients across the ranks
            opt.step()
        if rank == 0 and (step == 0 or step == a.steps - 1):
            print("step %d: loss %.6f" % (step, loss.item()), flush=True)

    worst = max((p - q).abs().max().item()
                for p, q in zip(fused.parameters(), plain.parameters()))
    same = torch.tensor([1.0 if worst < 2e-6 else 0.0], device=device)
    dist.all_reduce(same, op=dist.ReduceOp.MIN)  # every rank's weights agree with PyTorch's
    if rank == 0:
        print("ranks %d, device %s: fusec's weights against PyTorch's: largest difference "
              "%.3g: %s" % (dist.get_world_size(), device.type, worst,
                            "same" if same.item() == 1.0 else "DIFFERENT"), flush=True)
    # every rank past its last collective before any tears the group down: gloo aborts a
    # process ("terminate called without an active exception") that destroys it while its
    # peer still talks to it, in about one run of five here without fusec in the script too
    dist.barrier()
    dist.destroy_process_group()
    return 0 if same.item() == 1.0 else 1


if __name__ == "__main__":
    sys.exit(main())
