"""The sigma_w probe on any ``torch.nn.Module``: what the built-in engine does to its own nets at init.

:func:`apply_probe` draws every kernel of a model Kaiming-normal from the init seed's own random stream
(the engine's :func:`~initmem.collect.train.engine.seed_generator` with ``STREAM_INIT``) and scales them by
sigma_w, with the grid's probes (collect/train/probes.py, docs/arms.md):

* ``scale``: sigma_w multiplies the kernels ``target`` names: ``all_kernels``, ``normalized_kernels`` (those
  followed directly by a normalisation), ``convolutions`` or ``head``;
* ``layer_scale``: sigma_w multiplies one group, ``target`` = ``first`` (the first kernel), ``body`` (every
  kernel between) or ``head`` (the last kernel);
* ``shape``: sigma_w is the level code k, the kernels ``target`` names are drawn from ``shapes[k - 1]``
  (normal, uniform, truncated_normal, orthogonal) at the Kaiming variance, every shape a transform of the
  same standard-normal draws.

The kernel rule. A kernel is the ``weight`` of a ``Conv1d/2d/3d``, ``ConvTranspose1d/2d/3d`` or ``Linear``
module (subclasses included), and the input projection of a ``MultiheadAttention`` (``in_proj_weight``, or
``q_proj_weight``, ``k_proj_weight``, ``v_proj_weight``), which is a linear map stored as a bare parameter.
Embeddings, positional embeddings, class tokens and the affine parameters of normalisations are not kernels:
the probe leaves them as the model made them (so build the model after seeding torch when they must follow
the seed). Kernels are taken in ``named_modules()`` order, and each draws ``randn(weight.shape)`` (float32,
on the CPU, then copied to the kernel's device and dtype) from the one generator in that order, so the
kernels of a seed are the same on every device. The standard deviation is ``sigma_w * gain / sqrt(fan_in)``
with torch's fan-in (``weight.shape[1]`` times the receptive field; ``in / groups`` channels for a grouped
convolution); ``gain`` is sqrt 2 (Kaiming for ReLU) for every kernel but the last in module order, the
classifier head, whose gain is 1 (it is followed by the softmax), as in the engine; ``gains`` overrides it
per kernel. The biases of kernel modules are set to zero (``zero_biases``), as the engine's are, so that
the init depends on the seed alone. A kernel is *normalized* when its output goes straight into a
normalisation (BatchNorm, LayerNorm, GroupNorm, InstanceNorm, RMSNorm): found by tracing the model with
``torch.fx``, or named by ``normalized`` for a model that does not trace.

The built-in packed nets (collect/train/packed.py) are probed through their own kernel interface
(``kernels()``, ``gain``, ``fan_in``, ``normalized``), one member at a time (``member``); on the quick
preset's ``resnet1d`` this gives bitwise the kernels the engine draws (tests/test_probe.py).

Packing G copies of a user's model (docs/own-model.md): a model whose forward is a pure function of its
parameters and buffers can be trained as G members at once with ``torch.func.stack_module_state`` and
``torch.func.vmap`` over ``torch.func.functional_call``. BatchNorm cannot be packed as it is: in training it
updates its running statistics in place, an in-place write to a buffer that vmap refuses (and would share
between members); ``torch.func.replace_all_batch_norm_modules_`` stops it tracking running statistics (so
evaluation uses batch statistics), or each member keeps its own statistics outside vmap. Dropout and other
modules that draw from torch's global generator inside forward need ``randomness="different"`` and then draw
from one shared stream, so a member's masks depend on its pack. initmem's own engine packs by construction
(grouped convolutions) and is exact; a user's model is trained one cell at a time.
"""

from __future__ import annotations

import math
from collections.abc import Iterable, Mapping
from dataclasses import dataclass, field
from typing import Any

import torch
from torch import nn

from initmem.collect.train.engine import STREAM_INIT, seed_generator
from initmem.collect.train.packed import PackedNet, PConv
from initmem.collect.train.probes import shaped
from initmem.errors import UserError

KERNEL_MODULES: tuple[type[nn.Module], ...] = (nn.Conv1d, nn.Conv2d, nn.Conv3d, nn.ConvTranspose1d,
                                               nn.ConvTranspose2d, nn.ConvTranspose3d, nn.Linear)
CONV_MODULES: tuple[type[nn.Module], ...] = KERNEL_MODULES[:-1]
NORM_MODULES: tuple[type[nn.Module], ...] = (nn.modules.batchnorm._BatchNorm, nn.LayerNorm, nn.GroupNorm,
                                             nn.modules.instancenorm._InstanceNorm,
                                             *((nn.RMSNorm,) if hasattr(nn, "RMSNorm") else ()))
ATTENTION_PROJECTIONS = ("in_proj_weight", "q_proj_weight", "k_proj_weight", "v_proj_weight")
PROBES = ("scale", "layer_scale", "shape")
SCALE_TARGETS = ("all_kernels", "normalized_kernels", "convolutions", "head")
LAYER_TARGETS = ("first", "body", "head")
RELU_GAIN, HEAD_GAIN = math.sqrt(2.0), 1.0


@dataclass(frozen=True)
class Kernel:
    """One kernel of a model: its name (the module's, or ``module.parameter`` for an attention projection),
    the parameter, torch's fan-in, the Kaiming gain, whether it is a convolution and whether a normalisation
    follows it (None: not known). ``member``: the member index of a packed kernel ``[G, ...]``, else None."""

    name: str
    weight: torch.Tensor = field(repr=False)
    fan_in: int
    gain: float
    convolution: bool
    normalized: bool | None
    member: int | None = None

    def value(self) -> torch.Tensor:
        """The kernel's tensor (a packed kernel's member slice)."""
        return self.weight if self.member is None else self.weight[self.member]


@dataclass(frozen=True)
class ProbeRecord:
    """What :func:`apply_probe` did: every kernel in draw order and the names of those the probe acted on."""

    probe: str
    target: str
    level: float
    init_seed: int
    kernels: list[Kernel]
    acted_on: list[str]


def _plain_kernels(model: nn.Module) -> list[tuple[str, torch.Tensor, int, bool, nn.Module]]:
    out: list[tuple[str, torch.Tensor, int, bool, nn.Module]] = []
    for name, mod in model.named_modules():
        if isinstance(mod, nn.MultiheadAttention):
            for pname in ATTENTION_PROJECTIONS:
                w = getattr(mod, pname, None)
                if isinstance(w, torch.Tensor):
                    out.append((f"{name}.{pname}" if name else pname, w, int(w.shape[1]), False, mod))
        elif isinstance(mod, KERNEL_MODULES):
            w = mod.weight
            fan_in = int(nn.init._calculate_fan_in_and_fan_out(w)[0])
            out.append((name, w, fan_in, isinstance(mod, CONV_MODULES), mod))
    return out


def _traced_normalized(model: nn.Module, names: list[str]) -> dict[str, bool] | None:
    """Which kernel modules feed a normalisation directly, from a ``torch.fx`` trace; None if it does not trace."""
    try:
        import torch.fx

        graph = torch.fx.symbolic_trace(model).graph
    except Exception:  # any model that fx cannot trace: control flow on values, custom ops)
        return None
    modules = dict(model.named_modules())
    wanted = set(names)
    found = dict.fromkeys(names, False)
    for node in graph.nodes:
        if node.op != "call_module" or node.target not in wanted:
            continue
        users = list(node.users)
        found[node.target] = bool(users) and all(
            u.op == "call_module" and isinstance(modules.get(str(u.target)), NORM_MODULES) for u in users)
    return found


def kernels(model: nn.Module, *, member: int = 0, normalized: Iterable[str] | None = None,
            gains: Mapping[str, float] | None = None) -> list[Kernel]:
    """Every kernel of ``model`` in draw order, by the kernel rule of this module's docstring.

    Parameters
    ----------
    model : torch.nn.Module
        Any module; a built-in packed net is read through its own kernel interface.
    member : int
        The member of a packed net (ignored for other models).
    normalized : iterable of str, optional
        Names of the kernels that a normalisation follows, for a model ``torch.fx`` cannot trace
        (None: traced; where tracing fails, ``normalized`` is None on every kernel).
    gains : mapping of str to float, optional
        Kaiming gains by kernel name, replacing the default (sqrt 2, and 1 for the last kernel).

    Raises
    ------
    UserError
        The model has no kernel, or ``normalized`` / ``gains`` name a kernel it does not have.
    """
    label = type(model).__name__
    if isinstance(model, PackedNet):
        if not 0 <= member < model.G:
            raise UserError(f"member: {member} is not a member of this {model.G}-member {label}")
        return [Kernel(n, m.weight, int(m.fan_in), float(m.gain), isinstance(m, PConv), bool(m.normalized), member)
                for n, m in model.kernels()]
    found = _plain_kernels(model)
    if not found:
        raise UserError(f"model: {label} has no kernel to probe (no Conv*, ConvTranspose*, Linear or "
                        "MultiheadAttention module): the sigma_w probe scales kernels only")
    names = [n for n, *_ in found]
    for what, given in (("normalized", normalized), ("gains", gains)):
        unknown = sorted(set(given or ()) - set(names))
        if unknown:
            raise UserError(f"{what}: {label} has no kernel {unknown[0]!r} (its kernels: {', '.join(names[:6])}"
                            f"{', ...' if len(names) > 6 else ''})")
    if normalized is not None:
        marked = set(normalized)
        norm_of: dict[str, bool] | None = {n: n in marked for n in names}
    else:
        norm_of = _traced_normalized(model, names)
    out = []
    for i, (name, w, fan_in, conv, _mod) in enumerate(found):
        gain = (gains or {}).get(name, HEAD_GAIN if i == len(found) - 1 else RELU_GAIN)
        out.append(Kernel(name, w, fan_in, float(gain), conv, None if norm_of is None else norm_of.get(name, False)))
    return out


def _chosen(ks: list[Kernel], target: str, label: str) -> set[str]:
    """The kernels ``target`` names (an ``init.scale`` value, or an ``init.layers`` group)."""
    names = [k.name for k in ks]
    if target == "all_kernels":
        return set(names)
    if target == "head":
        return {names[-1]}
    if target == "first":
        return {names[0]}
    if target == "body":
        return set(names[1:-1])
    if target == "convolutions":
        out = {k.name for k in ks if k.convolution}
        if not out:
            raise UserError(f"target: {label} has no convolution for target 'convolutions'")
        return out
    if target == "normalized_kernels":
        if any(k.normalized is None for k in ks):
            raise UserError(f"target: normalized_kernels needs to know which kernels a normalisation follows, and "
                            f"{label} does not trace with torch.fx: pass normalized=[kernel names]")
        out = {k.name for k in ks if k.normalized}
        if not out:
            raise UserError(f"target: {label} has no kernel followed by a normalisation (normalized_kernels)")
        return out
    raise UserError(f"target: unknown target {target!r} (one of {', '.join(SCALE_TARGETS + LAYER_TARGETS[:2])})")


def _settings(probe: str, target: str | None, shapes: Iterable[str] | None, init: Any
              ) -> tuple[str, str, list[str]]:
    """(probe, target, shapes) from the arguments or from a grid's ``init`` section, checked."""
    if init is not None:
        probe = str(init.probe)
        target = str(init.layers) if probe == "layer_scale" else str(init.scale)
        shapes = init.shapes
    if probe not in PROBES:
        raise UserError(f"probe: {probe!r} cannot be applied to a given model (one of {', '.join(PROBES)}; "
                        "width_scaling builds the net at each width)")
    if probe == "layer_scale":
        if target not in LAYER_TARGETS:
            raise UserError(f"target: layer_scale needs one of {', '.join(LAYER_TARGETS)}, got {target!r}")
    else:
        target = target or "all_kernels"
        if target not in SCALE_TARGETS:
            raise UserError(f"target: {probe} needs one of {', '.join(SCALE_TARGETS)}, got {target!r}")
    shape_list = list(shapes or [])
    if probe == "shape" and len(shape_list) < 2:
        raise UserError("shapes: the shape probe needs at least two distributions (sigma_w k picks shapes[k - 1])")
    return probe, str(target), shape_list


def apply_probe(model: nn.Module, sigma_w: float, *, init_seed: int, probe: str = "scale", target: str | None = None,
                shapes: Iterable[str] | None = None, init: Any = None, member: int = 0,
                normalized: Iterable[str] | None = None, gains: Mapping[str, float] | None = None,
                zero_biases: bool = True) -> ProbeRecord:
    """Initialise ``model``'s kernels as the engine initialises a cell at sigma_w with ``init_seed``.

    Why: the memory diagnostic compares runs that differ only in sigma_w, with the same seed giving the same
    initial directions at every level (common random numbers). The draws come from the seed alone, and
    sigma_w multiplies them last, so a kernel at sigma_w = 2 is exactly twice the kernel at sigma_w = 1.

    Parameters
    ----------
    model : torch.nn.Module
        Any module (the kernel rule: module docstring); changed in place.
    sigma_w : float
        The probe level: the scale (``scale``, ``layer_scale``) or the level code k of ``shapes[k - 1]``.
    init_seed : int
        The cell's init seed; its ``STREAM_INIT`` generator draws every kernel, in kernel order.
    probe, target, shapes : str, str or None, list of str or None
        The grid's ``init.probe``, its ``init.scale`` (or ``init.layers`` for ``layer_scale``) and
        ``init.shapes``.
    init : InitSpec, optional
        A grid's ``init`` section, in place of ``probe``, ``target`` and ``shapes``.
    member, normalized, gains : int, iterable of str or None, mapping or None
        As :func:`kernels`.
    zero_biases : bool
        Set the biases of kernel modules to zero, as the engine's are.

    Returns
    -------
    ProbeRecord
        The kernels in draw order and the names of those the probe acted on.

    Raises
    ------
    UserError
        A model without kernels (named), an unknown probe or target, a target the model lacks.

    Examples
    --------
    The same seed draws the same directions at every level, and sigma_w scales them last:

    >>> import torch
    >>> import initmem
    >>> model = torch.nn.Sequential(torch.nn.Linear(8, 16), torch.nn.ReLU(), torch.nn.Linear(16, 2))
    >>> record = initmem.apply_probe(model, 2.0, init_seed=3)
    >>> record.acted_on
    ['0', '2']
    >>> at_two = model[0].weight.detach().clone()
    >>> _ = initmem.apply_probe(model, 1.0, init_seed=3)
    >>> torch.equal(at_two, 2 * model[0].weight.detach())
    True
    """
    probe, target, shape_list = _settings(probe, target, shapes, init)
    level = float(sigma_w)
    shape = None
    if probe == "shape":
        k = int(round(level))
        if not 1 <= k <= len(shape_list) or k != level:
            raise UserError(f"sigma_w: the shape probe's level {level:g} is not a level code 1..{len(shape_list)}")
        shape = shape_list[k - 1]
    elif not (math.isfinite(level) and level > 0):
        raise UserError(f"sigma_w: {level!r} is not a positive number")
    ks = kernels(model, member=member, normalized=normalized, gains=gains)
    chosen = _chosen(ks, target, type(model).__name__)
    generator = seed_generator(int(init_seed), STREAM_INIT)
    with torch.no_grad():
        for k in ks:
            dest = k.value()
            z = torch.randn(tuple(dest.shape), generator=generator, dtype=torch.float32)
            if shape is not None and k.name in chosen:
                z = shaped(z, shape)
            w = z * (k.gain / math.sqrt(k.fan_in))
            if shape is None and k.name in chosen:
                w = w * level
            dest.copy_(w.to(device=dest.device, dtype=dest.dtype))
        if zero_biases and not isinstance(model, PackedNet):
            _zero_biases(model)
    extra = getattr(model, "init_extra", None) if isinstance(model, PackedNet) else None
    if extra is not None:
        extra(member, generator)
    return ProbeRecord(probe, target, level, int(init_seed), ks, [k.name for k in ks if k.name in chosen])


def _zero_biases(model: nn.Module) -> None:
    for mod in model.modules():
        if isinstance(mod, KERNEL_MODULES) and isinstance(mod.bias, torch.Tensor):
            mod.bias.zero_()
        elif isinstance(mod, nn.MultiheadAttention) and isinstance(mod.in_proj_bias, torch.Tensor):
            mod.in_proj_bias.zero_()
