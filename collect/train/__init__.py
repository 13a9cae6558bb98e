"""The trainer wing: one readable training loop over packed networks (docs/collect.md).

It turns one pack of cells (one pipeline, several sigma_w x seed) into curves, selected checkpoints and
per-example predictions: datasets (``data``), packed networks (``nets``, ``normfree``, ``dense``, ``mlp``, ``vit``), the initialization probes (``probes``), the optimizer table's
torch side (``optim``), the learning-rate schedule and its clocks (``schedule``, torch-free), measured clocks
(``measure``), the checkpoint rule (``select``) and devices. It imports nothing from the run wing.
"""
