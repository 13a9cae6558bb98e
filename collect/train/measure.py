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
float64, so a member's numbers do not depend on the pack it is in. The angle of one step is
Kahan's ``2 atan2(|u - v|, |u + v|)`` of the unit vectors, which keeps full precision for the
tiny angle of one step, where ``arccos`` of a cosine near 1 would lose half the digits (a
formula from the three lengths |w_k|, |w_{k+1}|, |w_{k+1} - w_k| would not: when a step also
rescales the kernel, the lengths' rounding swamps the angle).
"""

from __future__ import annotations

from collections.abc import Sequence

import torch

LANE_PAD = 16  # twice the widest CPU vector of float64 (AVX-512: 8 lanes)


def lane_atan2(y: torch.Tensor, x: torch.Tensor) -> torch.Tensor:
    """``atan2`` of ``[G, L]`` tensors whose every element takes the same code path whatever G is.

    On CPU torch evaluates a transcendental function in vector lanes and the last
    ``n mod 2 * lanes`` elements with the scalar libm, and the two differ in the last bit: a member
    whose row falls in the tail in one pack size and not in another would get a different angle.
    Padding every row to a multiple of :data:`LANE_PAD` sends every element through the vector path.
    """
    pad = (-y.shape[1]) % LANE_PAD
    if y.device.type != "cpu" or not pad:
        return torch.atan2(y, x)
    yp = torch.nn.functional.pad(y, (0, pad), value=0.0)
    xp = torch.nn.functional.pad(x, (0, pad), value=1.0)
    return torch.atan2(yp, xp)[:, : y.shape[1]]


def cosine(a: torch.Tensor, b: torch.Tensor) -> torch.Tensor:
    """Row-wise cosine of two ``[G, n]`` float64 tensors, clamped to [-1, 1].

    ``dot / sqrt(|a|^2 |b|^2)``: for b = c * a with c a power of two it is exactly 1.
    """
    dot = (a * b).sum(1)
    return (dot / torch.sqrt((a * a).sum(1) * (b * b).sum(1))).clamp(-1.0, 1.0)


class StepMeter:
    """Angular path and T_eff accumulated over optimizer steps, for every member of a pack.

    Per step: one float64 copy of all kernels as ``[G, N]`` rows, scaled to unit length per
    layer; the angle to the previous step's unit vectors is ``2 atan2(|u - v|, |u + v|)`` with
    the norms taken over each layer's columns. A few dozen tensor operations per step whatever
    the number of layers' elements (the cost: benchmarks/measure_cost.py).
    """

    def __init__(self, kernels: Sequence[torch.Tensor], normalised: Sequence[bool]):
        self.kernels = list(kernels)
        self.normalised = torch.tensor([bool(n) for n in normalised], device=self.kernels[0].device)
        self.any_normalised = bool(self.normalised.any())
        self.normalised_idx = torch.nonzero(self.normalised).flatten()  # index_select: no device sync
        self.sizes = [int(w[0].numel()) for w in self.kernels]
        G = self.kernels[0].shape[0]
        dev = self.kernels[0].device
        self.init = self._flat()
        self._set_prev(self.init.clone())
        self.path = torch.zeros(G, len(self.kernels), dtype=torch.float64, device=dev)
        self.t_eff = torch.zeros(G, dtype=torch.float64, device=dev)

    def _flat(self) -> torch.Tensor:
        """All kernels now, as ``[G, N]`` float64 rows (layer by layer)."""
        return torch.cat([w.detach().flatten(1) for w in self.kernels], 1).to(torch.float64)

    def _norms(self, x: torch.Tensor) -> torch.Tensor:
        """``[G, L]`` Euclidean norm of each layer's columns."""
        return torch.stack([torch.linalg.vector_norm(part, dim=1) for part in x.split(self.sizes, 1)], 1)

    def before_step(self, lr: float) -> None:
        """Add eta / ||w_k||^2 of the weights the step is about to change to T_eff."""
        if self.any_normalised:
            self.t_eff += (lr / self.prev_norm.index_select(1, self.normalised_idx) ** 2).mean(1)

    def after_step(self) -> None:
        """Add the angle each kernel turned in the step just taken."""
        before = self.prev_unit
        self._set_prev(self._flat())
        self.path += 2.0 * lane_atan2(self._norms(before - self.prev_unit), self._norms(before + self.prev_unit))

    def cos_to_init(self) -> torch.Tensor:
        """``[G, L]`` cosine of every kernel now with its value at epoch 0."""
        return torch.stack([cosine(a, b) for a, b in zip(self.init.split(self.sizes, 1),
                                                         self.prev.split(self.sizes, 1), strict=True)], 1)

    def eff_lr(self, lr: float) -> torch.Tensor:
        """``[G, L]`` eta / ||w||^2 for normalised kernels, NaN for the others."""
        sq = self.prev_norm ** 2
        return torch.where(self.normalised[None, :], lr / sq, torch.full_like(sq, float("nan")))

    def t_angle(self) -> torch.Tensor:
        return self.path.mean(1)

    def t_eff_now(self) -> torch.Tensor:
        """T_eff, NaN when no kernel is followed by a normalisation."""
        if not self.any_normalised:
            return torch.full_like(self.t_eff, float("nan"))
        return self.t_eff

    def state_dict(self) -> dict[str, torch.Tensor]:
        return {"init": self.init.cpu().clone(), "path": self.path.cpu().clone(), "t_eff": self.t_eff.cpu().clone()}

    def load_state_dict(self, st: dict) -> None:
        """Restore after the model weights were restored (``prev`` is read from them)."""
        dev = self.path.device
        self.init = st["init"].to(dev, torch.float64)
        self.path = st["path"].to(dev, torch.float64)
        self.t_eff = st["t_eff"].to(dev, torch.float64)
        self._set_prev(self._flat())

    def _set_prev(self, flat: torch.Tensor) -> None:
        self.prev = flat
        self.prev_norm = self._norms(flat)
        self.prev_unit = self._scale_layers(flat, 1.0 / self.prev_norm)

    def _scale_layers(self, flat: torch.Tensor, factor: torch.Tensor) -> torch.Tensor:
        """``flat [G, N]`` with each layer's columns times that layer's ``factor [G, L]``.

        One broadcast multiply per layer: the same products, bit for bit, as multiplying by the
        factors gathered to every column (``index_select`` of each column's layer), without the
        gather, which torch runs element by element (on CPU a third of the bookkeeping a step).
        """
        out = torch.empty_like(flat)
        for i, (part, dst) in enumerate(zip(flat.split(self.sizes, 1), out.split(self.sizes, 1), strict=True)):
            torch.mul(part, factor[:, i:i + 1], out=dst)
        return out
