"""``initmem export``: an analysis folder as the parts of a paper (docs/export.md).

Why this exists beside the HTML report: a paper needs each figure as its own file at column
width, tables as LaTeX, a methods paragraph with citations, a bibliography and a reproduction
block, and none of them may say something the report does not. So everything here comes from the
report's own sources: the figures are the :mod:`initmem.plot` functions the report's section
table names (drawn in the paper style instead of the screen style), the tables are built from the
report's rows (reports/paper_tables.py), and the methods text is :func:`~initmem.reports.methods.methods_text`,
the function that writes the report's Methods section. What the folder lacks is skipped with
its reason (index.md lists both). Every file is written atomically.
"""

from __future__ import annotations

import hashlib
import json
import os
import shlex
from dataclasses import dataclass, field
from importlib import metadata
from pathlib import Path

import matplotlib.pyplot as plt

from initmem import cube, plot
from initmem.atomic import atomic_path, write_text
from initmem.errors import UserError, option
from initmem.grid import grid_hash
from initmem.plot.core import Skip, description
from initmem.plot.load import Analysis, find_cube, load_analysis
from initmem.plot.theme import PAPER, WIDTHS, style
from initmem.reports import sections
from initmem.reports.html import report_versions
from initmem.reports.methods import Sentence, methods_text
from initmem.reports.paper_tables import latex_escape, paper_tables, to_csv, to_latex, to_markdown
from initmem.reports.references import bibtex

FORMATS = ("pdf", "svg", "png")
FIGURES_DIR, TABLES_DIR = "figures", "tables"
PAD = 0.02  # inches of white around a figure's tight box


@dataclass
class ExportResult:
    """What ``export`` wrote (paths under ``out``) and what it skipped, with the reason."""

    out: Path
    files: list[Path] = field(default_factory=list)
    skipped: dict[str, str] = field(default_factory=dict)
    removed: list[Path] = field(default_factory=list)  # stale files of an earlier export into ``out``


def parse_formats(formats: str | tuple[str, ...] | list[str]) -> tuple[str, ...]:
    """``pdf,svg,png`` (any subset, comma-separated) -> a tuple; an unknown format is a ``UserError``."""
    items = formats.split(",") if isinstance(formats, str) else list(formats)
    out = tuple(dict.fromkeys(f.strip().lower().lstrip(".") for f in items if f.strip()))
    unknown = [f for f in out if f not in FORMATS]
    if unknown or not out:
        shown = ", ".join(unknown) if unknown else "none"
        raise UserError(f"unknown figure format {shown} for {option('format')}; choose from {', '.join(FORMATS)} "
                        "(comma-separated)")
    return out


def parse_width(width: str | float) -> float:
    """``single`` / ``double`` (a one- or two-column figure) or inches -> inches."""
    if isinstance(width, str) and width in WIDTHS:
        return WIDTHS[width]
    try:
        inches = float(width)
    except (TypeError, ValueError):
        raise UserError(f"{option('width')} must be {' or '.join(WIDTHS)} (or inches), not {width!r}") from None
    if not 1.0 <= inches <= 20.0:
        raise UserError(f"{option('width')} {inches:g} inches is not a paper figure width (1 to 20 inches)")
    return inches


# Figures ---------------------------------------------------------------------------------------

def _save(fig: plt.Figure, path: Path, fmt: str, key: str) -> None:
    """One figure file, atomically, with no timestamp inside (equal inputs give equal files).

    Cropped to its content ("tight", measured as each file is written): a legend or label outside
    the axes is kept, not cut off, and the figure stays at the chosen width unless such text sticks
    out (KEY.txt gives the size written)."""
    version = _version()
    meta = {"pdf": {"Creator": f"initmem {version}", "CreationDate": None, "ModDate": None},
            "svg": {"Creator": f"initmem {version}", "Date": None},
            "png": {"Software": f"initmem {version}"}}[fmt]
    with plt.rc_context({**PAPER, "svg.hashsalt": f"initmem-{key}"}), atomic_path(path) as tmp:
        fig.savefig(tmp, format=fmt, metadata=meta, dpi=PAPER["savefig.dpi"], bbox_inches="tight", pad_inches=PAD)


def export_figures(a: Analysis, out: Path, formats: tuple[str, ...], width: float, res: ExportResult) -> None:
    """Every figure the report shows, drawn by the same function in the paper style, in each format,
    with its caption (and alt text) in KEY.txt beside it."""
    folder = out / FIGURES_DIR
    for sec in sections.SECTIONS:
        for name in sec.figures:
            try:
                with style():
                    fig = getattr(plot, name)(a, width=width)
            except Skip as exc:
                res.skipped[f"figure {name}"] = str(exc)
                continue
            try:
                d = description(fig)
                for fmt in formats:
                    path = folder / f"{d.key}.{fmt}"
                    _save(fig, path, fmt, d.key)
                    res.files.append(path)
                box = fig.get_tightbbox().padded(PAD)  # inches, as the last file was cropped
                w, h = box.width, box.height
            finally:
                plt.close(fig)
            res.files.append(write_text(folder / f"{d.key}.txt", f"{d.caption}\n\nAlt text: {d.alt}\n\nSize: "
                                        f"{w:.2f} x {h:.2f} in ({sec.title}; initmem.plot.{name})\n"))


# Tables ----------------------------------------------------------------------------------------

def export_tables(a: Analysis, out: Path, res: ExportResult) -> None:
    """Each table as KEY.tex (booktabs), KEY.csv and KEY.md."""
    built, skipped = paper_tables(a)
    for key, why in skipped.items():
        res.skipped[f"table {key}"] = why
    for t in built:
        for ext, render in (("tex", to_latex), ("csv", to_csv), ("md", to_markdown)):
            res.files.append(write_text(out / TABLES_DIR / f"{t.key}.{ext}", render(t)))


# Methods and references --------------------------------------------------------------------------

def _with_cites(s: Sentence, cite: str) -> str:
    """The sentence with its citation before the final full stop."""
    text = s.text.rstrip()
    if not s.cites:
        return text
    body, stop = (text[:-1], ".") if text.endswith(".") else (text, "")
    return f"{body} {cite}{stop}"


def methods_markdown(paragraphs: list[list[Sentence]], source: str) -> str:
    """methods.md: the paragraphs with pandoc citations ``[@key]`` (keys in references.bib)."""
    body = "\n\n".join(" ".join(_with_cites(s, "[" + "; ".join(f"@{k}" for k in s.cites) + "]") for s in para)
                       for para in paragraphs if para)
    return (f"# Methods\n\n<!-- written by initmem export from {source}: the sentences of the report's Methods "
            "section; citation keys are in references.bib (pandoc reads them with its citeproc and that file as "
            f"bibliography) -->\n\n{body}\n")


def methods_latex(paragraphs: list[list[Sentence]], source: str) -> str:
    r"""methods.tex: the paragraphs, escaped, with ``\cite{key}`` (keys in references.bib)."""

    def sentence(s: Sentence) -> str:
        text = latex_escape(s.text.rstrip())
        return _with_cites(Sentence(text, s.cites), r"\cite{" + ",".join(s.cites) + "}")

    body = "\n\n".join(" ".join(sentence(s) for s in para) for para in paragraphs if para)
    src = source.replace("\n", " ")
    return (f"% written by initmem export from {src}: the sentences of the report's Methods section\n"
            "% \\input{methods} in a document with \\bibliography{references} (references.bib beside this file)\n"
            f"{body}\n")


# Reproduction ----------------------------------------------------------------------------------

def _version() -> str:
    try:
        return metadata.version("initmem")
    except metadata.PackageNotFoundError:  # pragma: no cover - a source tree without metadata
        return "unknown"


def sha256_file(path: Path) -> str:
    h = hashlib.sha256()
    with open(path, "rb") as f:
        for block in iter(lambda: f.read(1 << 20), b""):
            h.update(block)
    return h.hexdigest()


def environment_hash() -> tuple[str, int]:
    """sha256 of the sorted ``name==version`` lines of every installed distribution (what
    ``pip freeze`` lists), and how many there are: the environment, without running pip."""
    lines = sorted({f"{(d.metadata['Name'] or '').lower()}=={d.version}" for d in metadata.distributions()
                    if d.metadata["Name"]})
    return hashlib.sha256("\n".join(lines).encode()).hexdigest(), len(lines)


def _pyproject() -> Path | None:
    """initmem's pyproject.toml when it runs from a source tree (the repository is the package)."""
    path = Path(__file__).resolve().parents[1] / "pyproject.toml"
    return path if path.is_file() else None


def _cmd(v: object) -> str | None:
    if isinstance(v, list):
        return " ".join(shlex.quote(str(x)) for x in v)
    return str(v) if v else None


def _is_run_command(command: object) -> bool:
    """summary.json's command is an ``initmem run`` (the analysis was made by run, not analyze)."""
    if not isinstance(command, list):
        return False
    words = [Path(str(w)).name for w in command[:4]]
    return "run" in words[1:] and "analyze" not in words


def _read_json(path: Path) -> dict | None:
    try:
        data = json.loads(path.read_text())
    except (OSError, ValueError):
        return None
    return data if isinstance(data, dict) else None


def _run_options(a: Analysis, sequential: dict | None) -> list[str]:
    """The analysis options ``initmem run`` takes (--draws, --chains) as this analysis recorded them: a
    sequential run's in its looks' look.json, a fixed run's in the run folder's run_state.json."""
    opts: dict | None = None
    if sequential is not None:
        for look in sorted((a.dir / "looks").glob("*/look.json")) + [a.dir / "look.json"]:
            mark = _read_json(look)
            if mark is not None and isinstance(mark.get("analyze_options"), dict):
                opts = mark["analyze_options"]
                break
    else:
        state = _read_json(a.dir.parent / "run_state.json")
        if state is not None and isinstance(state.get("analyze_options"), dict):
            opts = state["analyze_options"]
    return _flags(**{k: int(opts[k]) for k in ("draws", "chains") if opts and opts.get(k) is not None})


def _flags(**opts: object) -> list[str]:
    """Command-line flags for a shell line of reproduce.md: a command to run, not a message, so it names the
    flags whoever calls the export (``True`` marks an on/off flag)."""
    return [f"--{k.replace('_', '-')}" + ("" if v is True else f" {v}") for k, v in opts.items()]


def _sequential(a: Analysis) -> dict | None:
    """The sequential record of an ``initmem run --until-decided`` analysis (sequential.json, else summary.json)."""
    record = _read_json(a.dir / "sequential.json")
    if record is None and a.summary.sequential is not None:
        record = a.summary.sequential.model_dump()
    return record if record and record.get("looks") else None


def _run_line(a: Analysis, name: str, made_by_run: bool) -> str:
    """The ``initmem run grid.yaml ...`` line that collects the cube again (and, for a run, analyzes it alike)."""
    seq = _sequential(a)
    if seq is not None:
        looks = ",".join(str(int(n)) for n in seq["looks"])
        words = ["initmem run grid.yaml", *_flags(until_decided=True, looks=looks), *_run_options(a, seq)]
        return (" ".join(words) + f"   # collects into runs/{name}, adds seeds look by look to undecided pipelines "
                f"({seq.get('design') or 'sequential'} design, alpha {seq.get('alpha', 0.05):g}; "
                "docs/sequential.md), reports")
    if made_by_run:
        words = ["initmem run grid.yaml", *_run_options(a, None)]
        return " ".join(words) + f"   # collects into runs/{name}, analyzes (fixed design), reports"
    return (f"initmem run grid.yaml   # collects the cube into runs/{name} (its own analysis aside: "
            "the analyze command below made this one)")


def reproduce_markdown(a: Analysis, out: Path, command: str, res: ExportResult) -> str:
    """reproduce.md: the commands, versions, the environment's hash, the grid's hash and the cube's checksum."""
    lines = ["# Reproducing these results", ""]
    used = a.summary.versions.get("initmem")
    lines.append(f"- initmem version of this export: {_version()}"
                 + (f"; the analysis was made with initmem {used}" if used else ""))
    env, n = environment_hash()
    lines.append(f"- environment hash (sha256 of the sorted `name==version` list of the {n} installed distributions, "
                 f"i.e. of `pip freeze` without its formatting): `{env}`")
    pyproject = _pyproject()
    lines.append(f"- lockfile hash: sha256 of initmem's pyproject.toml (initmem pins no lockfile): "
                 f"`{sha256_file(pyproject)}`" if pyproject else
                 "- lockfile hash: initmem is installed from a wheel, so its pyproject.toml is not at hand; "
                 "the environment hash above stands for it")
    grid = a.grid()
    recorded = a.cube.attrs.get(cube.A_GRID_HASH) if a.cube is not None else None
    if grid is not None:
        h = recorded or grid_hash(grid)
        lines.append(f"- grid `{grid.name}`: hash `{h}` (sha256 of the canonical grid YAML"
                     + ("; recorded in the cube" if recorded else "; computed from the cube's grid") + ")")
        res.files.append(write_text(out / "grid.yaml", grid.to_yaml()))
    else:
        lines.append("- grid: none (the cube was not collected from a grid file: "
                     f"{a.cube.attrs.get(cube.A_SOURCE, 'source not recorded') if a.cube is not None else 'no cube'})")
    cube_path = a.cube_path or find_cube(a.dir, a.summary.cube)
    if cube_path is not None:
        lines.append(f"- cube: `{cube_path}`, sha256 `{sha256_file(cube_path)}`")
    else:
        lines.append(f"- cube: not found (recorded as {a.summary.cube or 'nothing'}; looked beside and above "
                     f"{a.dir}), so no checksum")
        res.skipped["cube checksum"] = "the analysed cube was not found"
    if a.cube is not None and a.cube.attrs.get(cube.A_DATASET_FINGERPRINT):
        lines.append(f"- dataset fingerprint: `{a.cube.attrs[cube.A_DATASET_FINGERPRINT]}`")
    lines += ["", "## Commands", "", "```"]
    made_by_run = _is_run_command(a.summary.command)
    if grid is not None:
        lines.append(_run_line(a, grid.name, made_by_run))
    elif a.cube is not None and a.cube.attrs.get(cube.A_SOURCE):
        lines.append(f"# the cube came from: {a.cube.attrs[cube.A_SOURCE]} (its options are not recorded)")
    analyze = _cmd(a.summary.command)
    if made_by_run and grid is not None:  # the run line above repeats it, with the exported grid.yaml
        lines.append(f"# (recorded as: {analyze}; grid.yaml here is that run's grid)")
    elif made_by_run:
        lines.append(f"# recorded as: {analyze} (its grid file is not in this export)")
    else:
        lines.append(analyze if analyze else "# the analyze command is not recorded in summary.json")
    lines.append(f"initmem report {shlex.quote(str(a.dir))}")
    lines.append(command)
    lines += ["```", ""]
    return "\n".join(lines)


def _index(res: ExportResult) -> str:
    lines = ["# initmem export", "", "Written (relative to this folder):", ""]
    lines += [f"- `{p.relative_to(res.out)}`" for p in sorted(set(res.files))]
    lines += ["", "Not written, and why:", ""]
    lines += [f"- {k}: {v}" for k, v in res.skipped.items()] or ["- nothing skipped"]
    if res.removed:
        lines += ["", "Removed (written by an earlier export into this folder, not by this one):", ""]
        lines += [f"- {p.relative_to(res.out)}" for p in sorted(res.removed)]
    return "\n".join(lines) + "\n"


def python_call(analysis_dir: Path, out: Path, formats: tuple[str, ...], width: str | float) -> str:
    """This export as the Python call that repeats it (the command line passes its own command)."""
    return (f"python -c 'from initmem.reports.export import export_analysis; export_analysis({str(analysis_dir)!r}, "
            f"{str(out)!r}, formats={','.join(formats)!r}, width={width!r})'")


def export_analysis(analysis_dir: str | os.PathLike, out_dir: str | os.PathLike, *,
                    formats: str | tuple[str, ...] = FORMATS, width: str | float = "single",
                    command: str | None = None) -> ExportResult:
    """Write the paper's parts of an analysis folder: every report figure, the tables (LaTeX, CSV, Markdown),
    the methods text with references.bib, and a reproduction block (docs/export.md).

    Parameters
    ----------
    analysis_dir : str or os.PathLike
        A folder written by ``initmem analyze`` or ``initmem run``.
    out_dir : str or os.PathLike
        The export folder.
    formats : str or tuple of str, default ("pdf", "svg", "png")
        Figure formats (a comma-separated string works too).
    width : {"single", "double"} or float, default "single"
        Figure width: a journal column, two columns, or inches.
    command : str, optional
        The command line that repeats this export (the CLI passes it; reproduce.md shows the Python call
        otherwise).

    Returns
    -------
    ExportResult
        What was written, and which figures were skipped and why.

    Raises
    ------
    UserError
        Not an analysis folder, an unknown format or width; raised before anything is written.

    Examples
    --------
    The analysis folder of [`initmem.analyze`][initmem.analyze]'s example, its figures as PNG only:

    >>> import initmem
    >>> result = initmem.export("analysis", "paper", formats="png")
    >>> result.out, any(f.suffix == ".png" for f in result.files)
    (PosixPath('paper'), True)
    >>> result.skipped["figure training_curves"]
    'the cube has no training curves (train_acc, val_acc per epoch)'
    """
    fmts = parse_formats(formats)
    inches = parse_width(width)
    a = load_analysis(analysis_dir)
    out = Path(out_dir)
    if out.exists() and not out.is_dir():
        raise UserError(f"{out} exists and is not a folder")
    if out.resolve() == a.dir.resolve():
        raise UserError(f"{option('out')} must not be the analysis folder itself ({out})")
    try:
        out.mkdir(parents=True, exist_ok=True)
    except OSError as exc:
        raise UserError(f"cannot create the export folder {out} ({exc.strerror or exc})") from None
    before = previous_export(out)
    res = ExportResult(out=out)
    export_figures(a, out, fmts, inches, res)
    export_tables(a, out, res)
    paragraphs = methods_text(a, report_versions())
    source = str(a.dir)
    res.files.append(write_text(out / "methods.md", methods_markdown(paragraphs, source)))
    res.files.append(write_text(out / "methods.tex", methods_latex(paragraphs, source)))
    keys = [k for para in paragraphs for s in para for k in s.cites]
    res.files.append(write_text(out / "references.bib", bibtex(keys)))
    command = command or python_call(Path(analysis_dir), out, fmts, width)
    res.files.append(write_text(out / "reproduce.md", reproduce_markdown(a, out, command, res)))
    res.files.append(out / "index.md")
    remove_stale(out, before, res)
    write_text(out / "index.md", _index(res))
    return res


def previous_export(out: Path) -> set[Path]:
    """The files an earlier export into ``out`` wrote, as its index.md lists them (paths inside ``out``)."""
    try:
        text = (out / "index.md").read_text(encoding="utf-8")
    except (OSError, UnicodeDecodeError):
        return set()
    if not text.startswith("# initmem export"):
        return set()
    files = set()
    for line in text.splitlines():
        if line.startswith("- `") and line.endswith("`"):
            rel = Path(line[3:-1])
            if not rel.is_absolute() and ".." not in rel.parts and rel.parts:
                files.add(out / rel)
    return files


def remove_stale(out: Path, before: set[Path], res: ExportResult) -> None:
    """Remove what an earlier export wrote into ``out`` and this one did not (another analysis's figures,
    formats not asked for now, a figure skipped this time, a grid.yaml this analysis lacks), so the folder
    holds this export alone. Only files the earlier export's index.md lists, and, without one, files of this
    export's own names in other figure formats, are removed: a file of the user's is never touched."""
    written = {p.resolve() for p in res.files}
    stems = {p.stem for p in res.files if p.parent == out / FIGURES_DIR}
    others = {out / FIGURES_DIR / f"{stem}.{fmt}" for stem in stems for fmt in FORMATS}
    for path in sorted(before | others):
        if path.is_file() and not path.is_symlink() and path.resolve() not in written:
            try:
                path.unlink()
            except OSError:
                continue
            res.removed.append(path)


__all__ = ["FORMATS", "ExportResult", "environment_hash", "export_analysis", "python_call", "methods_latex",
           "methods_markdown",
           "parse_formats", "parse_width", "reproduce_markdown", "sha256_file"]
