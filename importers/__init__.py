"""Readers that turn runs made elsewhere into the long table ``initmem import`` builds a cube from.

One module per concern: :mod:`.columns` decides what every column means (cube variable, alias,
setting, declared metric) and refuses tables whose units or values would give a confident wrong
answer; :mod:`.derive` computes what a per-epoch table implies (selected accuracy, clocks, with
the engine's own code); :mod:`.trackers` reads W&B CSV exports, MLflow file stores and
TensorBoard logs with the trackers' own readers, imported lazily (docs/import.md); :mod:`.source` puts them
together as :func:`~initmem.importers.source.import_table` (``initmem.import_table``, what ``initmem import``
calls).
"""
