"""The execution wing: the machinery that turns a grid into a cube, resumably (docs/collect-runs.md).

The grid folder and its record (``grid_folder``), pack planning (``pack_plan``), one pack as a unit of work
(``pack_job``), the local and Slurm executors, per-cell shards and their assembly into ``cube.nc``
(``shards``, ``assemble``), checkpoints, the event log, progress bars, ``--status``, and the fault-injection
points of the crash tests (``fault_hooks``). ``runner.collect`` is the entry point of ``initmem collect`` and
``runner.collect_cube`` its public face; ``options.CollectOptions`` holds every option of a run as one record.
"""
