"""Measured clocks: how far each kernel has turned, from the weights themselves.

For a kernel followed by a normalisation only its direction matters, so its "time" is an angle:

* ``cos_to_init``: cosine between the kernel now and at epoch 0;
* ``angular_path``: the sum of the angles turned at every optimizer step,
  ``sum_k angle(w_k, w_{k+1})``; by the triangle inequality on the sphere it is at least
  ``arccos(cos_to_init)``;
* ``eff_lr`` = eta / ||w||^2: the step a scale-invariant kernel effectively takes on its sphere
  (NaN for kernels without a normalisation after them, e.g. the head);
* the layer-pooled clocks ``T_angle`` (mean over layers of angular_path) and ``T_eff``
  (sum over steps of eta_k / ||w_k||^2, mean over the normalised layers).

Everything is computed per member over the stacked ``[G, ...]`` kernels, row by row, in
float64, so a member's numbers do not depend on the pack it is in. Angles use Kahan's form
``2 atan2(|u - v|, |u + v|)`` on unit vectors, which keeps full precision for the tiny angle
of one step, where ``arccos`` of a cosine near 1 would lose half the digits.
"""

from __future__ import annotations

from collections.abc import Sequence

import torch


def flat64(w: torch.Tensor) -> torch.Tensor:
    """A kernel ``[G, ...]`` as ``[G, n]`` float64 rows (a copy)."""
    return w.detach().flatten(1).to(torch.float64)


def cosine(a: torch.Tensor, b: torch.Tensor) -> torch.Tensor:
    """Row-wise cosine of two ``[G, n]`` float64 tensors, clamped to [-1, 1].

    ``dot / sqrt(|a|^2 |b|^2)``: for b = c * a with c a power of two it is exactly 1.
    """
    dot = (a * b).sum(1)
    return (dot / torch.sqrt((a * a).sum(1) * (b * b).sum(1))).clamp(-1.0, 1.0)


def angle(a: torch.Tensor, b: torch.Tensor, sq_a: torch.Tensor | None = None,
          sq_b: torch.Tensor | None = None) -> torch.Tensor:
    """Row-wise angle in radians between ``[G, n]`` float64 rows (squared norms if known)."""
    na = torch.sqrt((a * a).sum(1) if sq_a is None else sq_a)[:, None]
    nb = torch.sqrt((b * b).sum(1) if sq_b is None else sq_b)[:, None]
    u, v = a / na, b / nb
    return 2.0 * torch.atan2(torch.linalg.vector_norm(u - v, dim=1), torch.linalg.vector_norm(u + v, dim=1))


class StepMeter:
    """Angular path and T_eff accumulated over optimizer steps, for every member of a pack."""

    def __init__(self, kernels: Sequence[torch.Tensor], normalised: Sequence[bool]):
        self.kernels = list(kernels)
        self.normalised = [bool(n) for n in normalised]
        G = self.kernels[0].shape[0]
        dev = self.kernels[0].device
        self.init = [flat64(w) for w in self.kernels]
        self.prev = [t.clone() for t in self.init]
        self.prev_sq = [(t * t).sum(1) for t in self.prev]
        self.path = torch.zeros(G, len(self.kernels), dtype=torch.float64, device=dev)
        self.t_eff = torch.zeros(G, dtype=torch.float64, device=dev)

    def before_step(self, lr: float) -> None:
        """Add eta / ||w_k||^2 of the weights the step is about to change to T_eff."""
        sq = [s for s, n in zip(self.prev_sq, self.normalised, strict=True) if n]
        if sq:
            self.t_eff += (lr / torch.stack(sq, 1)).mean(1)

    def after_step(self) -> None:
        """Add the angle each kernel turned in the step just taken."""
        for i, w in enumerate(self.kernels):
            cur = flat64(w)
            sq = (cur * cur).sum(1)
            self.path[:, i] += angle(self.prev[i], cur, self.prev_sq[i], sq)
            self.prev[i], self.prev_sq[i] = cur, sq

    def cos_to_init(self) -> torch.Tensor:
        """``[G, L]`` cosine of every kernel now with its value at epoch 0."""
        return torch.stack([cosine(a, b) for a, b in zip(self.init, self.prev, strict=True)], 1)

    def eff_lr(self, lr: float) -> torch.Tensor:
        """``[G, L]`` eta / ||w||^2 for normalised kernels, NaN for the others."""
        sq = torch.stack(self.prev_sq, 1)
        mask = torch.tensor(self.normalised, device=sq.device)
        return torch.where(mask[None, :], lr / sq, torch.full_like(sq, float("nan")))

    def t_angle(self) -> torch.Tensor:
        return self.path.mean(1)

    def t_eff_now(self) -> torch.Tensor:
        """T_eff, NaN when no kernel is followed by a normalisation."""
        if not any(self.normalised):
            return torch.full_like(self.t_eff, float("nan"))
        return self.t_eff

    def state_dict(self) -> dict[str, torch.Tensor | list[torch.Tensor]]:
        return {"init": [t.cpu().clone() for t in self.init], "path": self.path.cpu().clone(),
                "t_eff": self.t_eff.cpu().clone()}

    def load_state_dict(self, st: dict) -> None:
        """Restore after the model weights were restored (``prev`` is read from them)."""
        dev = self.path.device
        self.init = [t.to(dev, torch.float64) for t in st["init"]]
        self.path = st["path"].to(dev, torch.float64)
        self.t_eff = st["t_eff"].to(dev, torch.float64)
        self.prev = [flat64(w) for w in self.kernels]
        self.prev_sq = [(t * t).sum(1) for t in self.prev]
