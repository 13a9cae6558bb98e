"""An optimizer over the stacked ``[G, ...]`` parameters of a pack, with per-member freezing.

Every kind of the optimizer table (initmem/optimizers.py: SGD with momentum, Nesterov and
coupled L2, Adam with coupled L2, AdamW with decoupled decay, RMSprop, Lion, Schedule-Free
AdamW) is element-wise, so one optimizer over the stacked tensors is exactly G independent
optimizers: on CPU the multi-tensor (``foreach``) kernels give a member bitwise the same numbers
alone and in any pack (tests/test_engine.py and tests/test_recipes.py check it with
``torch.equal``). On CUDA the fused kernels are used where torch has them. The learning rate of
every step comes from :mod:`initmem.schedule` and is set on the parameter groups before the step.
Schedule-Free AdamW's scalars (its step count, weight sum and ``lr_max``) depend only on that
learning rate and the step, which every member of a pack shares.

A member marked frozen (diverged) keeps its parameters and optimizer state: they are copied
out before the step and written back after it.
"""

from __future__ import annotations

import importlib
from typing import Any

import torch

from initmem import optimizers
from initmem.grid import PipelineSpec


def make_torch_optimizer(params: list[torch.nn.Parameter], spec: PipelineSpec, device_kind: str
                         ) -> torch.optim.Optimizer:
    """The optimizer of ``spec``, as its entry in the optimizer table names it (initmem/optimizers.py:
    a ``torch.optim`` class, foreach on CPU and fused on CUDA, or a library's: ``lion_pytorch.Lion``,
    ``schedulefree.AdamWScheduleFree``). A schedule-free optimizer is returned in training mode."""
    kind = optimizers.get(spec.optimizer)
    opt = getattr(importlib.import_module(kind.module), kind.torch_class)(params, **kind.kwargs(spec, device_kind))
    if kind.schedule_free:
        opt.train()   # it starts in eval mode and refuses to step there
    return opt


class PackedOptimizer:
    """A ``torch.optim`` optimizer of a pack, stepped at a given lr with some members frozen."""

    def __init__(self, params: list[torch.nn.Parameter], spec: PipelineSpec, device_kind: str | None = None,
                 lr_factors: list[tuple[torch.nn.Parameter, torch.Tensor]] | None = None):
        self.params = list(params)
        kind = device_kind or self.params[0].device.type
        self.opt = make_torch_optimizer(self.params, spec, kind)
        # Whether the weights to evaluate are the optimizer's average, not the training point (at_average).
        self.schedule_free = optimizers.get(spec.optimizer).schedule_free
        # Per-member learning-rate factors [G] of some parameters (muP, collect/train/probes.py): the
        # step's change of such a parameter is multiplied by its member's factor, which for SGD,
        # Adam and AdamW is exactly that member's step at lr x factor (up to rounding).
        self.lr_factors = [(p, f.to(p.device).reshape(-1, *([1] * (p.dim() - 1)))) for p, f in lr_factors or []]

    def _member_state(self) -> list[torch.Tensor]:
        """Every per-member state tensor (momentum buffers, Adam moments); not the step counts."""
        out = []
        for p in self.params:
            for v in self.opt.state.get(p, {}).values():
                if isinstance(v, torch.Tensor) and v.dim() > 0 and v.shape[:1] == p.shape[:1]:
                    out.append(v)
        return out

    @torch.no_grad()
    def step(self, lr: float, frozen: list[int] | None = None) -> None:
        for group in self.opt.param_groups:
            group["lr"] = lr
        saved = None
        if frozen:
            idx = torch.tensor(frozen, device=self.params[0].device)
            state = self._member_state()
            saved = (idx, [p.index_select(0, idx) for p in self.params], state,
                     [t.index_select(0, idx) for t in state])
        before = [p.detach().clone() for p, _ in self.lr_factors]
        self.opt.step()
        for (p, f), old in zip(self.lr_factors, before, strict=True):
            p.copy_(old + f * (p - old))
        if saved is not None:
            idx, p_old, state, s_old = saved
            for p, old in zip(self.params, p_old, strict=True):
                p.index_copy_(0, idx, old)
            for t, old in zip(state, s_old, strict=True):  # state created by this step stays as made
                t.index_copy_(0, idx, old)

    @torch.no_grad()
    def to_average(self) -> list[torch.Tensor]:
        """Schedule-free kinds: set the parameters to the averaged point x (the optimizer's ``.eval()``)
        and return the training point y to pass to :meth:`to_training_point`; others: no-op, []."""
        if not self.schedule_free:
            return []
        saved = [p.detach().clone() for p in self.params]
        self.opt.eval()
        return saved

    @torch.no_grad()
    def to_training_point(self, saved: list[torch.Tensor]) -> None:
        """Back to training after :meth:`to_average`: the optimizer's ``.train()``, then the training
        point copied back, so that how often a run evaluates cannot change its training (``.train()``
        alone recomputes y from x and z, which rounds)."""
        if not self.schedule_free:
            return
        self.opt.train()
        for p, old in zip(self.params, saved, strict=True):
            p.copy_(old)

    def state_dict(self) -> dict[str, Any]:
        sd = self.opt.state_dict()
        return {"param_groups": sd["param_groups"],
                "state": {k: {n: (v.detach().cpu().clone() if isinstance(v, torch.Tensor) else v)
                              for n, v in st.items()} for k, st in sd["state"].items()}}

    def load_state_dict(self, sd: dict[str, Any]) -> None:
        self.opt.load_state_dict(sd)
