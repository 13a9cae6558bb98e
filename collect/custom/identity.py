"""Which code a user-code pipeline runs, checked before any cell runs and recorded with its runs.

:func:`check_user_code` refuses a grid whose entry point cannot be imported or whose command names no program
(or no script) before the grid folder is written: one ``UserError`` line naming the field
(``pipelines.mine.entry``). :func:`code_identity` is what the cube records of the code, per pipeline: the entry
point or command, the file it runs, that file's sha256 and the versions of the packages it trains with
(docs/own-model.md, "The grid"). Torch-free.
"""

from __future__ import annotations

import contextlib
import hashlib
import importlib
import importlib.machinery
import importlib.util
import json
import os
import shlex
import shutil
import sys
from collections.abc import Iterator
from importlib import metadata
from pathlib import Path
from typing import Any

from initmem.collect.execution.grid_folder import GridFolder
from initmem.errors import UserError
from initmem.grid import Grid, UserPipelineSpec

# Per-pipeline coordinates of a user-code pipeline (strings; '' on the built-in engine's pipelines of a mixed
# grid): the entry point or command, the file it runs, its sha256, and package versions as JSON.
CODE, CODE_FILE, CODE_SHA256, CODE_PACKAGES = "code", "code_file", "code_sha256", "code_packages"
CODE_COORDS = (CODE, CODE_FILE, CODE_SHA256, CODE_PACKAGES)
# Packages whose versions change what a training loop computes, recorded when installed.
RECORDED_PACKAGES = ("torch", "numpy", "torchvision", "lightning", "pytorch-lightning", "timm", "transformers")
PYTHONS = ("python", "python3")  # a command's program that means "the interpreter initmem runs in"
CODE_BASE = "code_base"   # run.json's key: the folder the run's user-code pipelines took relative paths from


def workdir_of(spec: UserPipelineSpec, base: Path | None = None) -> Path:
    """The folder a pipeline's code runs in: its ``workdir``, a relative one taken from ``base`` (the grid
    file's folder, :func:`code_base`; None: the current folder), else ``base`` itself; absolute, so that worker
    processes and Slurm tasks agree."""
    folder = Path(spec.workdir).expanduser() if spec.workdir else Path(".")
    if not folder.is_absolute():
        folder = (base if base is not None else Path.cwd()) / folder
    return folder.resolve()


def code_base(grid: Grid) -> Path:
    """The folder a user-code pipeline's relative ``workdir`` (and an absent one) is taken from.

    A grid file's relative paths are its own folder's, wherever initmem starts from, as a config file's are.
    The copy of the grid a grid folder keeps (``DIR/grid.yaml``, beside ``DIR/run.json``) takes the folder the
    run recorded (``code_base`` in run.json, written by every collect), so a resume from that copy runs the same
    code; a grid folder that recorded none, a preset and a grid made in Python take the current folder."""
    if grid.base_dir is None:
        return Path.cwd()
    base = Path(grid.base_dir)
    record = GridFolder(base).record_file
    if not record.is_file():
        return base
    try:
        recorded = json.loads(record.read_text(encoding="utf-8")).get(CODE_BASE)
    except (OSError, ValueError, AttributeError):
        recorded = None
    return Path(recorded) if recorded else Path.cwd()


@contextlib.contextmanager
def on_path(folder: Path) -> Iterator[None]:
    """``folder`` first on ``sys.path`` for the duration (an entry point's module is looked for there first)."""
    sys.path.insert(0, str(folder))
    try:
        yield
    finally:
        with contextlib.suppress(ValueError):
            sys.path.remove(str(folder))


def _spec_in(module_name: str, workdir: Path) -> importlib.machinery.ModuleSpec | None:
    """Where ``module_name`` is found with ``workdir`` first on the path, ignoring a module of that name already
    imported from elsewhere (``importlib.util.find_spec`` would return that one); None where the path finder
    does not find it (a module that an installed package's own import hook provides)."""
    top, _, rest = module_name.partition(".")
    spec = importlib.machinery.PathFinder.find_spec(top, [str(workdir), *sys.path])
    for part in rest.split(".") if rest else ():
        if spec is None or not spec.submodule_search_locations:
            return None
        spec = importlib.machinery.PathFinder.find_spec(f"{spec.name}.{part}", list(spec.submodule_search_locations))
    return spec


def _forget_other(module_name: str, workdir: Path) -> None:
    """Drop an imported module of the same name from another file (two pipelines' ``train:main`` in two
    workdirs), with its package's modules, so that this workdir's own is imported."""
    spec, loaded = _spec_in(module_name, workdir), sys.modules.get(module_name)
    mine = Path(spec.origin).resolve() if spec is not None and spec.origin else None
    theirs = getattr(loaded, "__file__", None)
    if mine is not None and theirs is not None and Path(theirs).resolve() != mine:
        top = module_name.partition(".")[0]
        for key in [k for k in sys.modules if k == top or k.startswith(top + ".")]:
            del sys.modules[key]


def import_entry(entry: str, workdir: Path) -> Any:
    """The callable an entry point ``package.module:function`` names (``ImportError`` / ``AttributeError``),
    its module looked for in ``workdir`` first."""
    module_name, _, attr = entry.partition(":")
    _forget_other(module_name, workdir)
    with on_path(workdir):
        obj: Any = importlib.import_module(module_name)
    for part in attr.split("."):
        obj = getattr(obj, part)
    return obj


def command_argv(command: str) -> list[str]:
    """A command's argument list, ``python`` / ``python3`` as the interpreter initmem runs in (whose environment
    has initmem, which the script's ``initmem.load_cell()`` needs)."""
    argv = shlex.split(command)
    if argv and argv[0] in PYTHONS:
        argv[0] = sys.executable
    return argv


def _script(argv: list[str], workdir: Path) -> Path | None:
    """The Python script a ``python ... script.py`` command runs (relative to ``workdir``), if it names one."""
    if not argv or not Path(argv[0]).name.startswith("python"):
        return None
    for arg in argv[1:]:
        if arg == "-m" or arg == "-c":
            return None
        if not arg.startswith("-"):
            return (workdir / arg) if not Path(arg).is_absolute() else Path(arg)
    return None


def _module_after_m(argv: list[str]) -> str | None:
    if "-m" in argv[1:]:
        i = argv.index("-m", 1)
        return argv[i + 1] if i + 1 < len(argv) else ""
    return None


def code_file(spec: UserPipelineSpec, workdir: Path) -> Path | None:
    """The file whose bytes are the pipeline's code: the entry point's module, the command's script (or
    ``-m`` module), else the command's program."""
    if spec.entry is not None:
        module_name = spec.entry.partition(":")[0]
        found = _spec_in(module_name, workdir)
        if found is None:
            with on_path(workdir):
                found = importlib.util.find_spec(module_name)
        return Path(found.origin) if found is not None and found.origin else None
    argv = command_argv(str(spec.command))
    script = _script(argv, workdir)
    if script is not None:
        return script
    module = _module_after_m(argv)
    if module:
        with on_path(workdir):
            found = importlib.util.find_spec(module)
        return Path(found.origin) if found is not None and found.origin else None
    program = argv[0] if argv else ""
    local = workdir / program
    if os.sep in program and local.is_file():
        return local
    which = shutil.which(program)
    return Path(which) if which else None


def check_user_code(grid: Grid) -> None:
    """Refuse, before any cell runs, an entry point that cannot be imported (or names no callable) and a
    command whose program or script does not exist: one ``UserError`` line naming the field."""
    base = code_base(grid)
    for name, spec in grid.user_pipelines.items():
        workdir = workdir_of(spec, base)
        if spec.workdir is not None and not workdir.is_dir():
            raise UserError(f"pipelines.{name}.workdir: no such folder {workdir}")
        if spec.entry is not None:
            _check_entry(name, spec.entry, workdir)
        else:
            _check_command(name, str(spec.command), workdir)


def _check_entry(name: str, entry: str, workdir: Path) -> None:
    where = f"pipelines.{name}.entry"
    try:
        fn = import_entry(entry, workdir)
    except ImportError as exc:
        raise UserError(f"{where}: cannot import {entry.partition(':')[0]!r} ({exc.__class__.__name__}: {exc}; "
                        f"looked in {workdir} and on the Python path)") from None
    except AttributeError:
        raise UserError(f"{where}: module {entry.partition(':')[0]!r} has no {entry.partition(':')[2]!r}") from None
    except Exception as exc:   # the module raised while it was imported
        raise UserError(f"{where}: importing {entry.partition(':')[0]!r} raised {exc.__class__.__name__}: "
                        f"{exc}".replace("\n", " ")) from None
    if not callable(fn):
        raise UserError(f"{where}: {entry} is not callable (it should be a function taking the cell)")


def _check_command(name: str, command: str, workdir: Path) -> None:
    where = f"pipelines.{name}.command"
    try:
        argv = command_argv(command)
    except ValueError as exc:
        raise UserError(f"{where}: cannot be split into arguments ({exc})") from None
    if not argv:
        raise UserError(f"{where}: names no program")
    program = argv[0]
    local = workdir / program
    if not (shutil.which(program) or (os.sep in program and local.is_file() and os.access(local, os.X_OK))
            or Path(program).is_absolute() and os.access(program, os.X_OK)):
        raise UserError(f"{where}: no program {program!r} (not on PATH, nor an executable file in {workdir})")
    script = _script(argv, workdir)
    if script is not None and not script.is_file():
        raise UserError(f"{where}: no script {script} (relative paths are taken from {workdir})")
    module = _module_after_m(argv)
    if module is not None:
        with on_path(workdir):
            found = importlib.util.find_spec(module) if module else None
        if found is None:
            raise UserError(f"{where}: no module {module!r} to run with -m")


def _sha256(path: Path | None) -> str:
    if path is None or not path.is_file():
        return ""
    h = hashlib.sha256()
    with open(path, "rb") as fh:
        for block in iter(lambda: fh.read(1 << 20), b""):
            h.update(block)
    return h.hexdigest()


def _versions(extra: tuple[str, ...] = ()) -> dict[str, str]:
    out: dict[str, str] = {}
    for dist in (*RECORDED_PACKAGES, *extra):
        try:
            out[dist] = metadata.version(dist)
        except metadata.PackageNotFoundError:
            continue
    return out


def code_identity(spec: UserPipelineSpec, workdir: Path) -> dict[str, str]:
    """The code's identity as the cube's per-pipeline coordinates: entry point or command, the file it runs
    (relative to ``workdir`` where it lies inside), its sha256, and the package versions (JSON)."""
    path = code_file(spec, workdir)
    shown = ""
    if path is not None:
        try:
            shown = str(path.resolve().relative_to(workdir))
        except ValueError:
            shown = str(path)
    extra: tuple[str, ...] = ()
    if spec.entry is not None:
        top = spec.entry.partition(":")[0].split(".")[0]
        extra = tuple(metadata.packages_distributions().get(top, ()))
    return {CODE: spec.label(), CODE_FILE: shown, CODE_SHA256: _sha256(path),
            CODE_PACKAGES: json.dumps(_versions(extra), sort_keys=True)}
