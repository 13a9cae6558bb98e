"""``initmem export``: the parts of a paper from an analysis folder (docs/export.md).

The work is :func:`initmem.reports.export.export_analysis`; this module is the command line
(options, the printed summary). Registered on the group by cli/main.py.
"""

from __future__ import annotations

from pathlib import Path

import click

from initmem.cli.output import check_not_grid_folder, echo, output_error


@click.command()
@click.argument("analysis_dir", metavar="ANALYSIS_DIR", type=click.Path(path_type=Path))
@click.option("--out", "-o", "out_dir", required=True, metavar="DIR", type=click.Path(path_type=Path),
              help="Folder for figures/, tables/, methods.md, methods.tex, references.bib, reproduce.md.")
@click.option("--format", "formats", default="pdf,svg,png", show_default=True, metavar="LIST",
              help="Figure formats, comma-separated: any of pdf, svg, png.")
@click.option("--width", default="single", show_default=True, metavar="single|double|INCHES",
              help="Figure width: one column (3.5 in), two columns (7.16 in) or inches.")
def export(analysis_dir: Path, out_dir: Path, formats: str, width: str) -> None:
    """Write every report figure (PDF, SVG, PNG at paper width, caption beside), every table (LaTeX,
    CSV, Markdown), the methods text with citations, references.bib and reproduce.md; print the folder.

    \b
    initmem export runs/quick/analysis --out paper/
    initmem export runs/quick/analysis --out paper/ --format pdf --width double
    """
    import shlex

    from initmem.reports.export import export_analysis

    # the command that repeats this export, from its options (not sys.argv, which a caller may not have)
    again = (f"initmem export {shlex.quote(str(analysis_dir))} --out {shlex.quote(str(out_dir))} "
             f"--format {shlex.quote(formats)} --width {shlex.quote(width)}")
    check_not_grid_folder(analysis_dir)
    try:
        res = export_analysis(analysis_dir, out_dir, formats=formats, width=width, command=again)
    except OSError as exc:
        raise output_error(exc, out_dir) from None
    echo(f"wrote {len(set(res.files))} files")
    for what, why in res.skipped.items():
        echo(f"  skipped {what}: {why}")
    if res.removed:
        echo(f"  removed {len(res.removed)} file(s) an earlier export had written there (listed in index.md)")
    click.echo(str(out_dir))
