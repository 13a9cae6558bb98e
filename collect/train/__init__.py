"""The trainer wing: one readable training loop over packed networks (docs/collect.md).

It turns one pack of cells (one pipeline, several sigma_w x seed) into curves, selected checkpoints and
per-example predictions: datasets (``data``); the packed layers (``packed``, ``normfree``, ``dense``) below
the architectures (``resnets``, ``mlp``, ``vit``) below their factory (``nets``); the initialization probes
(``probes``); the optimizer table's torch side (``optim``); measured clocks (``measure``) and devices. The
learning-rate schedule and its clocks (initmem/schedule.py) and the checkpoint rule (grid/select.py) are
torch-free and live below. It imports nothing from the execution wing.
"""
