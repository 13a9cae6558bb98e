"""The nutpie samplers of the memory, crossed and exponent models, compiled once per model structure.

nutpie compiles a PyMC model in two steps: PyTensor builds and rewrites the log density and its
gradient, and numba turns them, wrapped in two C callbacks (log density, expansion to the traced
variables), into machine code. The second step was 95% of ``initmem analyze`` (62.6 s of 66 s on a
16-seed cube). Yet the compiled code depends only on the model's *structure*: every array the
memory model reads is ``pm.Data`` (models/memory.py), read at run time through nutpie's
``user_data`` pointer, so one compiled sampler serves any data of the same shape.

So the compiled sampler is kept at two levels, both keyed by :func:`structure_key` (a hash of the
compiled shape -- the table's, or a larger one it is padded to (models/memory.py, "Slots") -- the
constants baked into the graph, the source of the modules that write the graph, and the versions of
every library in the compile chain):

* in this process, a small table of compiled samplers: a second model of the same structure (the
  sensitivity refit, a sequential look, the calibration's many fits) gets the sampler with its
  own data swapped in (``with_data``) at no compile cost;
* on disk, numba's own cache files of the two C callbacks plus a ``meta.json`` that describes the
  sampler's layout, one folder per key under :func:`cache_dir`. A later process loads the machine
  code instead of compiling and skips PyTensor's graph work as well.

Why this is safe. The same machine code runs whether it was compiled now or loaded, so a fit
gives the same draws with and without the cache (tests/test_memory_model.py checks bitwise).
The files are written atomically (numba's writes, then ``meta.json`` last as the commit mark);
an entry that fails to load for any reason (truncated, corrupt, another version) is removed and
compiled again, never an error. numba's cache files are pickles and machine code: loading one
runs what it contains, so the cache is used only in a folder owned by the current user that no
one else can write (:func:`untrusted`); otherwise it is skipped and the fit's diagnostics say why
(``compile_cache``). ``INITMEM_CACHE_DIR`` moves the cache; ``INITMEM_CACHE_DIR=off`` turns the
disk level off. docs/memory-model.md, "Compiled model cache".
"""

from __future__ import annotations

import contextlib
import dataclasses
import hashlib
import json
import os
import shutil
import stat
import sys
import time
from collections import OrderedDict
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import numpy as np

from initmem.atomic import write_text

CACHE_ENV = "INITMEM_CACHE_DIR"
OFF = ("off", "0", "none", "false")
FORMAT = 1                       # bump when meta.json's layout or the key's recipe changes
_MEMORY: OrderedDict[str, Any] = OrderedDict()
_MEMORY_SIZE = 8                 # compiled samplers kept per process (a few MB each)
# The modules whose source writes the PyTensor graph: any edit there is a new structure.
_GRAPH_SOURCES = ("memory.py", "core.py", "priors.py", "compiled.py")


@dataclass
class Compiled:
    """A compiled sampler for one model and where it came from."""

    sampler: Any                 # nutpie's CompiledPyMCModel, holding this model's data
    source: str                  # "compiled", "memory" (this process) or "disk"
    seconds: float               # wall time to compile or load
    key: str
    note: str | None = None      # why the disk cache was not used or an entry was dropped

    @property
    def cache_hit(self) -> bool:
        return self.source in ("memory", "disk")

    def record(self) -> dict[str, Any]:
        """The fit diagnostics' ``compile_cache`` entry: where the sampler came from, and why not from the
        disk cache when there is a note."""
        out: dict[str, Any] = {"source": self.source, "cache_hit": self.cache_hit, "key": self.key[:16]}
        if self.note:
            out["note"] = self.note
        return out


def cache_dir() -> Path | None:
    """The disk cache's folder: $INITMEM_CACHE_DIR, else $XDG_CACHE_HOME/initmem, else
    ~/.cache/initmem; None when INITMEM_CACHE_DIR is 'off'."""
    env = os.environ.get(CACHE_ENV)
    if env is not None and env.strip().lower() in OFF:
        return None
    if env:
        return Path(env).expanduser()
    base = os.environ.get("XDG_CACHE_HOME") or str(Path.home() / ".cache")
    return Path(base) / "initmem"


def untrusted(folder: Path) -> str | None:
    """Why ``folder`` must not be loaded from (None when it may): it must be a real folder owned by
    this user and writable by nobody else, since loading a cache entry runs its contents."""
    try:
        st = folder.lstat()
    except OSError as exc:
        return f"{folder} cannot be read ({exc.strerror})"
    if not stat.S_ISDIR(st.st_mode):
        return f"{folder} is not a folder"
    if hasattr(os, "getuid") and st.st_uid != os.getuid():
        return f"{folder} belongs to another user"
    if st.st_mode & (stat.S_IWGRP | stat.S_IWOTH):
        return f"{folder} is writable by other users"
    return None


def versions() -> dict[str, str]:
    """Every library whose version changes the compiled code or the cache's file format, and the
    CPU the code is compiled for (a home folder shared by machines keeps one entry per CPU)."""
    import llvmlite
    import llvmlite.binding
    import numba
    import nutpie
    import pymc
    import pytensor

    from initmem.version import __version__

    return {"initmem": __version__, "pymc": pymc.__version__, "pytensor": pytensor.__version__,
            "nutpie": nutpie.__version__, "numba": numba.__version__, "llvmlite": llvmlite.__version__,
            "numpy": np.__version__, "python": sys.version.split()[0], "platform": sys.platform,
            "cpu": llvmlite.binding.get_host_cpu_name()}


def source_hash(path: str | Path) -> str:
    """sha256 of a module's source: a model written outside ``_GRAPH_SOURCES`` puts the hash of the module that
    writes its graph into its ``structure()``, so that an edit there is a new structure."""
    return hashlib.sha256(Path(path).read_bytes()).hexdigest()


def structure_key(structure: dict[str, Any]) -> str:
    """sha256 of the model's structure (shapes, graph constants), the source of the modules that
    write the graph, the PyTensor flags that change numba's code, the versions and the format."""
    import pytensor

    here = Path(__file__).resolve().parent
    sources = {name: hashlib.sha256((here / name).read_bytes()).hexdigest() for name in _GRAPH_SOURCES}
    flags = {"floatX": pytensor.config.floatX, "fastmath": bool(pytensor.config.numba__fastmath)}
    blob = json.dumps({"format": FORMAT, "structure": structure, "sources": sources, "flags": flags,
                       "versions": versions()}, sort_keys=True, default=str)
    return hashlib.sha256(blob.encode()).hexdigest()


def compile_model(model: Any, key: str, data: dict[str, np.ndarray]) -> Compiled:
    """The nutpie sampler of ``model`` (a PyMC model whose arrays ``data`` are its ``pm.Data``):
    from this process's table, else from the disk cache, else compiled (and then stored in both)."""
    t0 = time.perf_counter()
    if key in _MEMORY:
        _MEMORY.move_to_end(key)
        sampler = _rebind(_MEMORY[key], model, data)
        return Compiled(sampler, "memory", time.perf_counter() - t0, key)
    folder, note = _entry_folder(key)
    with _compiling(folder):   # another process compiling this structure: wait, then load its entry
        sampler = None
        if folder is not None and (folder / "meta.json").exists():
            try:
                sampler = _load(folder, key, model, data)
            except Exception as exc:  # any failure to load is a miss, never an error
                note = f"cache entry {folder} could not be loaded ({exc.__class__.__name__}); recompiled"
                _clear_entry(folder)
                sampler = None
        source = "disk" if sampler is not None else "compiled"
        if sampler is None:
            sampler, store_note = _compile(model, folder, key)
            note = note or store_note
    _remember(key, sampler)
    return Compiled(sampler, source, time.perf_counter() - t0, key, note)


class NutpieFit:
    """The compile-once, sample, swap-data bookkeeping that every PyMC model sampled with nutpie shares
    (models/memory.py, models/crossed.py, models/exponents.py). A subclass provides ``model`` (the PyMC model) and
    ``structure()`` (what its compiled sampler depends on besides the code), and calls
    :meth:`_nutpie_sample` to fit and :meth:`_share_sampler` when it makes a copy with new data."""

    def __init__(self, model: Any) -> None:
        self.model = model
        self._compiled: Any = None        # compiled on the first fit
        self.compile_seconds = 0.0
        self.compile_cache: dict[str, Any] = {}
        self.sampling_seconds = 0.0

    def structure(self) -> dict[str, Any]:
        raise NotImplementedError

    def _nutpie_sample(self, data: dict[str, np.ndarray], *, draws: int, tune: int, chains: int, seed: int,
                       target_accept: float, progress: bool) -> Any:
        """Compile (or fetch) this model's sampler on first use, then draw with nutpie; returns the
        InferenceData and records where the sampler came from and how long each step took."""
        import nutpie

        if self._compiled is None:
            got = compile_model(self.model, structure_key(self.structure()), data)
            self._compiled = got.sampler
            self.compile_seconds = got.seconds
            self.compile_cache = got.record()
        t0 = time.perf_counter()
        idata = nutpie.sample(self._compiled, draws=draws, tune=tune, chains=chains, seed=seed,
                              cores=min(chains, os.cpu_count() or 1), progress_bar=progress,
                              target_accept=target_accept, save_warmup=False)
        self.sampling_seconds = time.perf_counter() - t0
        return idata

    def _share_sampler(self, new: NutpieFit, data: dict[str, np.ndarray]) -> None:
        """Give ``new`` (a copy of this model holding other data of the same shape) this model's compiled
        sampler with ``data`` swapped in: a refit at no compile cost."""
        if self._compiled is not None:
            new._compiled = self._compiled.with_data(**data)
            new.compile_seconds = 0.0
            new.compile_cache = {**self.compile_cache, "source": "memory", "cache_hit": True}


def clear_memory() -> None:
    """Forget this process's compiled samplers (tests of the disk level)."""
    _MEMORY.clear()


def _remember(key: str, sampler: Any) -> None:
    _MEMORY[key] = sampler
    _MEMORY.move_to_end(key)
    while len(_MEMORY) > _MEMORY_SIZE:
        _MEMORY.popitem(last=False)


COMPILING_LOCK = "compiling.lock"


@contextlib.contextmanager
def _compiling(folder: Path | None) -> Any:
    """Hold the entry's lock while it is looked up and, on a miss, compiled and stored: two processes that need
    one structure at once (two analyses, a test run's workers) compile it once, the second loading the first's
    entry. The kernel drops the lock when its holder dies; without a lock (a file system that has none) each
    compiles, as before."""
    if folder is None:
        yield
        return
    import fcntl

    fd = None
    with contextlib.suppress(OSError):
        fd = os.open(folder / COMPILING_LOCK, os.O_RDWR | os.O_CREAT, 0o600)
        fcntl.flock(fd, fcntl.LOCK_EX)
    try:
        yield
    finally:
        if fd is not None:
            os.close(fd)


def _clear_entry(folder: Path) -> None:
    """Remove an entry's stored sampler (every file but the lock, which its holder keeps using)."""
    for f in folder.iterdir():
        if f.is_dir():
            shutil.rmtree(f, ignore_errors=True)
        elif f.name != COMPILING_LOCK:
            f.unlink(missing_ok=True)


def _entry_folder(key: str) -> tuple[Path | None, str | None]:
    """The key's folder under a trusted cache root (created 0700), or None and why not."""
    root = cache_dir()
    if root is None:
        return None, f"disk cache off ({CACHE_ENV}=off)"
    try:
        root.mkdir(parents=True, exist_ok=True, mode=0o700)
    except OSError as exc:
        return None, f"disk cache not used: {root} cannot be created ({exc.strerror})"
    why = untrusted(root)
    if why:
        return None, f"disk cache not used: {why}"
    folder = root / "compiled" / key[:32]
    for f in (folder.parent, folder):
        with contextlib.suppress(OSError):
            f.mkdir(exist_ok=True, mode=0o700)
        why = untrusted(f)
        if why:
            return None, f"disk cache not used: {why}"
    return folder, None


# nutpie's compile, with cacheable C callbacks ---------------------------------------------------

def _initial_point(model: Any, names: list[str], shapes: list[tuple[int, ...]]) -> Any:
    """nutpie's default initial point (support point, jittered) as a flat-array function: built per
    model, because it reads the model's own data (sigma_sd's prior scale)."""
    from nutpie import compile_pymc as ncp
    from pymc.initial_point import make_initial_point_fn

    fn = make_initial_point_fn(model=model, default_strategy="support_point", jitter_rvs=set(model.free_RVs),
                               return_transformed=True)
    return ncp._rv_dict_to_flat_array_wrapper(ncp._wrap_with_lock(fn), names=names, shapes=shapes)


def _rebind(sampler: Any, model: Any, data: dict[str, np.ndarray]) -> Any:
    """A compiled sampler of the same structure with this model's data, labels and initial point."""
    from nutpie import compile_pymc as ncp

    names, _, shapes = sampler.shape_info
    n_free = len(model.free_RVs)
    dims, coords = ncp._prepare_dims_and_coords(model, sampler.shape_info)
    new = sampler.with_data(**{k: v for k, v in data.items() if k in sampler.shared_data})
    return dataclasses.replace(new, dims=dims, _coords=coords,
                               initial_point_func=_initial_point(model, names[:n_free], shapes[:n_free]))


def _cfunc(py_func: Any, sig: Any, folder: Path | None, name: str, key: str, *, load_only: bool = False) -> Any:
    """numba.cfunc(sig)(py_func), cached in ``folder`` under ``name`` and indexed by ``key`` alone
    (numba's own index hashes the callback's closure, which differs in every process);
    ``load_only`` never writes the cache (a stand-in function that must not be stored)."""
    from numba.core import sigutils
    from numba.core.ccallback import CFunc

    cf = CFunc(py_func, sigutils.normalize_signature(sig), locals={}, options={})
    if folder is not None:
        cf._cache = _keyed_cache(py_func, folder, name, key, load_only)
    cf.compile()
    return cf


def _keyed_cache(py_func: Any, folder: Path, name: str, key: str, load_only: bool) -> Any:
    from numba.core.caching import CompileResultCacheImpl, FunctionCache, IndexDataCacheFile, _CacheLocator

    class Locator(_CacheLocator):
        def ensure_cache_path(self) -> None:
            folder.mkdir(parents=True, exist_ok=True, mode=0o700)

        def get_cache_path(self) -> str:
            return str(folder)

        def get_source_stamp(self) -> str:
            return key

        def get_disambiguator(self) -> str:
            return ""

        @classmethod
        def from_function(cls, _py_func: Any, _py_file: str) -> None:
            return None

    class Impl(CompileResultCacheImpl):
        def __init__(self) -> None:   # no locator search: the folder is ours
            self._lineno = 0
            self._locator = Locator()
            self._filename_base = name
            self.cachable = True

        def check_cachable(self, cres: Any) -> bool:
            # numba's own check, without its warning (which needs a source file this locator does not have): code
            # that calls a C function through a pointer, such as scipy's special functions behind a censored
            # likelihood's normal CDF, holds an address of this process and cannot be stored
            self.cachable = all(x.can_cache for x in cres.lifted) and not cres.library.has_dynamic_globals
            return self.cachable

    class Cache(FunctionCache):
        def __init__(self) -> None:
            self._name = name
            self._py_func = py_func
            self._impl = Impl()
            self._cache_path = str(folder)
            self._cache_file = IndexDataCacheFile(cache_path=str(folder), filename_base=name, source_stamp=key)
            self.enable()

        def _index_key(self, sig: Any, codegen: Any) -> tuple:
            return (sig, codegen.magic_tuple(), key)

        def _save_overload(self, sig: Any, data: Any) -> None:
            if not load_only:
                with contextlib.suppress(OSError):   # a cache that cannot be written is only slower
                    super()._save_overload(sig, data)

    return Cache()


def _compile(model: Any, folder: Path | None, key: str) -> tuple[Any, str | None]:
    """nutpie.compile_pymc_model(model) (numba backend, default initial point), with its two C
    callbacks written to ``folder`` for later processes; falls back to nutpie's own compile when
    its internals are not what this was written against (nutpie 0.16)."""
    import nutpie

    try:
        return _compile_cached(model, folder, key)
    except (ImportError, AttributeError, TypeError) as exc:
        note = f"compiled without the disk cache (nutpie internals changed: {exc.__class__.__name__}: {exc})"
        return nutpie.compile_pymc_model(model), note


def _compile_cached(model: Any, folder: Path | None, key: str) -> tuple[Any, str | None]:
    from nutpie import compile_pymc as ncp

    names_free = [model.rvs_to_values[v].name for v in model.free_RVs]
    from pymc.initial_point import make_initial_point_fn

    point_fn = ncp._wrap_with_lock(make_initial_point_fn(
        model=model, default_strategy="support_point", jitter_rvs=set(model.free_RVs), return_transformed=True))
    n_dim, n_expanded, logp_pt, expand_pt, initial_point, shape_info = ncp._make_functions(
        model, mode="NUMBA", compute_grad=True, join_expanded=True, pymc_initial_point_fn=point_fn, var_names=None)
    shared_data, shared_vars = {}, {}
    for var in [*logp_pt.get_shared(), *expand_pt.get_shared()]:
        if var.name in shared_data and shared_vars[var.name] is not var:
            raise ValueError(f"shared variables must have unique names: {var.name}")
        shared_data[var.name] = np.array(var.get_value(), order="C", copy=True)
        shared_vars[var.name] = var
    for val in shared_data.values():
        val.flags.writeable = False
    user_data = ncp.make_user_data(shared_vars, shared_data)
    logp_names = [v.name for v in logp_pt.get_shared()]
    expand_names = [v.name for v in expand_pt.get_shared()]
    logp_raw, logp_sig = ncp._make_c_logp_func(n_dim, logp_pt.vm.jit_fn, user_data, logp_names, shared_data)
    expand_raw, expand_sig = ncp._make_c_expand_func(n_dim, n_expanded, expand_pt.vm.jit_fn, user_data,
                                                     expand_names, shared_data)
    logp_cf = _cfunc(logp_raw, logp_sig, folder, "logp", key)
    expand_cf = _cfunc(expand_raw, expand_sig, folder, "expand", key)
    dims, coords = ncp._prepare_dims_and_coords(model, shape_info)
    sampler = ncp.CompiledPyMCModel(
        _n_dim=n_dim, dims=dims, _coords=coords, _shapes={n: tuple(s) for n, _, s in zip(*shape_info, strict=True)},
        compiled_logp_func=logp_cf, compiled_expand_func=expand_cf, initial_point_func=initial_point,
        shared_data=shared_data, user_data=user_data, n_expanded=n_expanded, shape_info=shape_info,
        logp_func=logp_pt, expand_func=expand_pt)
    note = None
    if folder is not None and not all(cf._cache._impl.cachable for cf in (logp_cf, expand_cf)):
        note = ("compiled code that calls C functions through pointers of this process (such as scipy's special "
                "functions) cannot be stored in the disk cache; compiled in every process")
        folder = None
    if folder is not None:
        names, slices, shapes = shape_info
        meta = {"format": FORMAT, "key": key, "n_dim": int(n_dim), "n_expanded": int(n_expanded),
                "free": names_free, "names": [str(n) for n in names],
                "slices": [[int(s.start), int(s.stop)] for s in slices],
                "shapes": [[int(d) for d in s] for s in shapes],
                "shared": {n: {"ndim": int(v.ndim), "dtype": str(v.dtype)} for n, v in shared_data.items()}}
        try:   # written last: an entry without meta.json is never loaded
            write_text(folder / "meta.json", json.dumps(meta, indent=1))
        except OSError as exc:
            note = f"the compiled sampler could not be stored in {folder} ({exc.strerror})"
    return sampler, note


def _load(folder: Path, key: str, model: Any, data: dict[str, np.ndarray]) -> Any:
    """The sampler from a cache entry: the C callbacks' machine code from numba's files, the rest
    (layout, data, initial point, labels) from meta.json and this model; no PyTensor compile."""
    import numba
    from nutpie import compile_pymc as ncp

    meta = json.loads((folder / "meta.json").read_text(encoding="utf-8"))
    if meta.get("format") != FORMAT or meta.get("key") != key:
        raise ValueError("meta.json of another format or key")
    names = list(meta["names"])
    slices = [slice(a, b) for a, b in meta["slices"]]
    shapes = [tuple(s) for s in meta["shapes"]]
    free = [model.rvs_to_values[v].name for v in model.free_RVs]
    if free != meta["free"] or names[:len(free)] != free:
        raise ValueError("the model's free variables differ from the entry's")
    shared_data = {}
    for name, info in meta["shared"].items():
        value = np.array(data[name] if name in data else model[name].get_value(), dtype=info["dtype"], order="C",
                         copy=True)
        if value.ndim != info["ndim"]:
            raise ValueError(f"{name} has rank {value.ndim}, the entry {info['ndim']}")
        value.flags.writeable = False
        shared_data[name] = value
    record = {name: np.empty((0,) * info["ndim"]) for name, info in meta["shared"].items()}
    user_data = ncp.make_user_data(record, shared_data)
    n_dim, n_expanded = int(meta["n_dim"]), int(meta["n_expanded"])
    logp_sig = numba.types.int64(numba.types.uint64, numba.types.CPointer(numba.types.double),
                                 numba.types.CPointer(numba.types.double), numba.types.CPointer(numba.types.double),
                                 numba.types.voidptr)
    expand_sig = numba.types.int64(numba.types.uint64, numba.types.uint64, numba.types.CPointer(numba.types.double),
                                   numba.types.CPointer(numba.types.double), numba.types.voidptr)
    callbacks = []
    for name, sig in (("logp", logp_sig), ("expand", expand_sig)):
        cf = _cfunc(_never_compiled, sig, folder, name, key, load_only=True)
        if cf.cache_hits != 1:
            raise ValueError(f"the entry has no {name} callback")
        callbacks.append(cf)
    shape_info = (names, slices, shapes)
    dims, coords = ncp._prepare_dims_and_coords(model, shape_info)
    n_free = len(free)
    return ncp.CompiledPyMCModel(
        _n_dim=n_dim, dims=dims, _coords=coords, _shapes={n: s for n, s in zip(names, shapes, strict=True)},
        compiled_logp_func=callbacks[0], compiled_expand_func=callbacks[1],
        initial_point_func=_initial_point(model, names[:n_free], shapes[:n_free]),
        shared_data=shared_data, user_data=user_data, n_expanded=n_expanded, shape_info=shape_info,
        logp_func=None, expand_func=None)


def _never_compiled(_a: Any, _b: Any, _c: Any, _d: Any, _e: Any) -> int:
    """Stands for a C callback that is only ever loaded from the cache: were it compiled, the
    entry was missing, which :func:`_load` turns into a miss (and it is never stored)."""
    return -1


__all__ = ["CACHE_ENV", "Compiled", "cache_dir", "clear_memory", "compile_model", "source_hash", "structure_key",
           "untrusted"]
