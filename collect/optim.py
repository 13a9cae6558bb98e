"""Learning-rate schedules and a packed optimizer over stacked ``[G, ...]`` parameters.

SGD (momentum, Nesterov), Adam (coupled L2) and AdamW (decoupled decay) are element-wise, so
one optimizer over the stacked tensors is exactly G independent optimizers. Members marked
inactive (diverged) are frozen: their parameters and optimizer state are left untouched. The
update rules follow ``torch.optim`` (PyTorch >= 2.0 defaults, no dampening, no amsgrad).
"""

from __future__ import annotations

import math

import torch

from initmem.grid import PipelineSpec


class Schedule:
    """The learning rate used at optimizer step k (0-based), warm-up included."""

    def __init__(self, spec: PipelineSpec, steps_per_epoch: int):
        self.spec = spec
        self.spe = steps_per_epoch
        self.total = spec.epochs * steps_per_epoch
        self.warmup = spec.warmup_epochs * steps_per_epoch

    def lr(self, k: int) -> float:
        s = self.spec
        if k < self.warmup:
            return s.lr * (k + 1) / self.warmup
        if s.schedule == "constant":
            return s.lr
        if s.schedule == "cosine":
            span = max(self.total - self.warmup, 1)
            p = (k - self.warmup) / span
            return s.lr * 0.5 * (1.0 + math.cos(math.pi * p))
        epoch = k // self.spe
        return s.lr * s.gamma ** sum(1 for m in s.milestones if epoch >= m)


class PackedOptimizer:
    """SGD / Adam / AdamW on stacked parameters, with per-member freezing."""

    def __init__(self, params: list[torch.nn.Parameter], spec: PipelineSpec):
        self.params = list(params)
        self.spec = spec
        self.kind = spec.optimizer
        self.k = 0  # steps taken
        self.state: dict[str, list[torch.Tensor]] = {}
        if self.kind == "sgd" and spec.momentum > 0:
            self.state["momentum_buffer"] = [torch.zeros_like(p) for p in self.params]
        if self.kind in ("adam", "adamw"):
            self.state["exp_avg"] = [torch.zeros_like(p) for p in self.params]
            self.state["exp_avg_sq"] = [torch.zeros_like(p) for p in self.params]

    @torch.no_grad()
    def step(self, lr: float, frozen: list[int] | None = None) -> None:
        saved = None
        if frozen:
            idx = torch.tensor(frozen, device=self.params[0].device)
            saved = ([p.index_select(0, idx) for p in self.params],
                     {k: [t.index_select(0, idx) for t in v] for k, v in self.state.items()})
        self.k += 1
        s = self.spec
        if self.kind == "sgd":
            self._sgd(lr, s)
        else:
            self._adam(lr, s)
        if saved is not None:
            p_saved, st_saved = saved
            for p, old in zip(self.params, p_saved, strict=True):
                p.index_copy_(0, idx, old)
            for k, v in self.state.items():
                for t, old in zip(v, st_saved[k], strict=True):
                    t.index_copy_(0, idx, old)

    def _sgd(self, lr: float, s: PipelineSpec) -> None:
        bufs = self.state.get("momentum_buffer")
        for i, p in enumerate(self.params):
            if p.grad is None:
                continue
            d = p.grad
            if s.weight_decay:
                d = d.add(p, alpha=s.weight_decay)
            if bufs is not None:
                buf = bufs[i]
                if self.k == 1:
                    buf.copy_(d)
                else:
                    buf.mul_(s.momentum).add_(d)
                d = d.add(buf, alpha=s.momentum) if s.nesterov else buf
            p.add_(d, alpha=-lr)

    def _adam(self, lr: float, s: PipelineSpec) -> None:
        b1, b2 = s.betas
        bc1 = 1 - b1 ** self.k
        bc2 = 1 - b2 ** self.k
        step_size = lr / bc1
        bc2_sqrt = math.sqrt(bc2)
        for i, p in enumerate(self.params):
            if p.grad is None:
                continue
            g = p.grad
            if self.kind == "adamw":
                if s.weight_decay:
                    p.mul_(1 - lr * s.weight_decay)
            elif s.weight_decay:
                g = g.add(p, alpha=s.weight_decay)
            m, v = self.state["exp_avg"][i], self.state["exp_avg_sq"][i]
            m.lerp_(g, 1 - b1)
            v.mul_(b2).addcmul_(g, g, value=1 - b2)
            denom = (v.sqrt() / bc2_sqrt).add_(s.eps)
            p.addcdiv_(m, denom, value=-step_size)

    def state_dict(self) -> dict:
        return {"k": self.k, "state": {k: [t.detach().cpu().clone() for t in v] for k, v in self.state.items()}}

    def load_state_dict(self, sd: dict) -> None:
        self.k = int(sd["k"])
        for k, v in sd["state"].items():
            for t, src in zip(self.state[k], v, strict=True):
                t.copy_(src)
