"""Fill the Results section of docs/atlas.md from an atlas run: the export's atlas table, the cube's checksum and
library versions, and each recipe's measured verdicts beside the predictions the page registered before the run.

The page's other sections (design, pilot, predictions) are left exactly as committed: the predictions are read
from the page's own "Predictions" table, and only the text from "## Results" on is rewritten.

    python studies/atlas_page.py runs/atlas [--rerun runs/atlas-rerun] [--page docs/atlas.md]

``runs/atlas`` is the folder of ``initmem run --preset atlas --out runs/atlas``; the export goes to
``runs/atlas/export`` (``initmem export runs/atlas/analysis --out runs/atlas/export``). ``--rerun`` adds the verdicts
of a second run of the same recipes on fresh seeds (the atlas grid with other ``seeds``), row by row.
"""

from __future__ import annotations

import argparse
import json
from pathlib import Path

from initmem import cube as C
from initmem import names as N
from initmem.grid import grid_hash
from initmem.plot.load import load_analysis
from initmem.reports.export import export_analysis, sha256_file
from initmem.reports.paper_tables import atlas_table
from initmem.reports.tables import SURVIVORSHIP_MARK, counts_as_decided, marked_verdict
from initmem.stats.radial import FORGETS as RADIAL_FORGETS
from initmem.stats.radial import KEEPS as RADIAL_KEEPS

RESULTS = "## Results"
RADIAL_WORDS = {"keeps": RADIAL_KEEPS, "forgets": RADIAL_FORGETS}


def predictions(page: str) -> dict[str, tuple[str, str]]:
    """The registered (accuracy, radial) prediction of each recipe, from the page's Predictions table."""
    section = page.split("## Predictions", 1)[1].split("\n## ", 1)[0]
    out = {}
    for line in section.splitlines():
        cells = [c.strip() for c in line.strip().strip("|").split("|")]
        if len(cells) >= 4 and cells[2] in (N.REMEMBERS, N.FORGETS):
            out[cells[0]] = (cells[2], RADIAL_WORDS.get(cells[3], cells[3]))
    return out


def _match(measured: str, predicted: str) -> str:
    """Measured against predicted; a verdict the survivorship check overturns is not decided (its shown text carries
    the mark, reports/tables.py ``SURVIVORSHIP_MARK``)."""
    if SURVIVORSHIP_MARK in measured:
        return f"not decided ({SURVIVORSHIP_MARK})"
    if measured not in (N.REMEMBERS, N.FORGETS, RADIAL_KEEPS, RADIAL_FORGETS):
        return "undecided"
    return "as predicted" if measured == predicted else "**not as predicted**"


def results_section(run: Path, page: str) -> str:
    """The Results section: the atlas table, provenance, and measured beside predicted."""
    analysis = run / "analysis"
    export = run / "export"
    export_analysis(analysis, export, formats=("svg", "png"),
                    command=f"initmem export {analysis} --out {export} --formats svg,png")
    a = load_analysis(analysis)
    table = (export / "tables" / "atlas.md").read_text().strip()
    cube_path = run / "cube.nc"
    attrs = a.cube.attrs if a.cube is not None else {}
    grid = a.grid()
    versions = ", ".join(f"{name} {attrs[key]}" for key, name in (
        (C.A_INITMEM_VERSION, "initmem"), (C.A_TORCH_VERSION, "torch"), (C.A_LION_VERSION, "lion-pytorch"),
        (C.A_SCHEDULEFREE_VERSION, "schedulefree")) if attrs.get(key))
    seq = a.summary.sequential
    hashes = json.loads((run / "run.json").read_text()).get("grid_hashes", []) if (run / "run.json").is_file() else []
    first = hashes[0] if hashes else (attrs.get(C.A_GRID_HASH) or (grid_hash(grid) if grid else "unknown"))
    registered_hash = "matches the hash registered above" if first in page.split(RESULTS, 1)[0] else \
        "**differs from the hash registered above**"
    lines = [RESULTS, "",
             f"Measured by `initmem run --preset atlas` ({seq.runs_used if seq else '?'} runs trained; a fixed design "
             f"on the last look's seeds would train {seq.runs_fixed if seq else '?'}). The first look's grid hash "
             f"`{first}` {registered_hash}; the later looks' grids differ from it only by the seeds they add. Cube "
             f"sha256 `{sha256_file(cube_path)}`; {versions}. Regenerate this section with "
             f"`python studies/atlas_page.py {run}`.", "", table, "",
             "![The spread over sigma_w per recipe, with its 90% interval, coloured by verdict]"
             "(atlas-spread-forest.svg)", "",
             "### Measured beside predicted", "",
             "| recipe | predicted | measured | | predicted radial | measured radial | |",
             "|---|---|---|---|---|---|---|"]
    registered = predictions(page)
    t = atlas_table(a)
    col = {c.name: i for i, c in enumerate(t.columns)}
    misses = []
    for row in t.rows:
        name = row[col["recipe"]]
        verdict, radial = str(row[col["verdict"]]), str(row[col["radial"]])
        pv, pr = registered.get(name, ("not registered", "not registered"))
        m1, m2 = _match(verdict, pv), _match(radial, pr)
        lines.append(f"| {name} | {pv} | {verdict} | {m1} | {pr} | {radial} | {m2} |")
        misses += [f"{name}: {what} {got}, predicted {want}" for what, got, want, m in (
            ("accuracy", verdict, pv, m1), ("radial", radial, pr, m2)) if m.startswith("**")]
    undecided = [str(r[col["recipe"]]) for r in t.rows if str(r[col["verdict"]]) not in (N.REMEMBERS, N.FORGETS)
                 and SURVIVORSHIP_MARK not in str(r[col["verdict"]])]
    overturned = [str(r[col["recipe"]]) for r in t.rows if SURVIVORSHIP_MARK in str(r[col["verdict"]])]
    n_decided = sum(counts_as_decided(a.pipe(str(r[col["recipe"]]))) for r in t.rows)
    lines += ["", f"Decided: {n_decided} of {len(t.rows)} recipes"
              + (f" ({', '.join(overturned)}: {SURVIVORSHIP_MARK}, so not counted; docs/memory-model.md, "
                 "\"Survivorship\")" if overturned else "") + ".", "",
              "Not as predicted:" if misses else "Every decided verdict is as predicted"
              + (f"; undecided at the cap: {', '.join(undecided)}." if undecided else "."), ""]
    lines += [f"- {m}" for m in misses]
    parted = [f"{r[col['recipe']]} ({r[col['verdict']]}, radial: {r[col['radial']]})" for r in t.rows
              if r[col["agreement"]] == "disagree"]
    kept = sum(str(r[col["holm"]]) in (N.REMEMBERS, N.FORGETS) for r in t.rows)
    lines += ["", "### Reading the table", "",
              "- **Where the function and the norms part:** " + ("; ".join(parted) if parted else "nowhere") + ". "
              "The Predictions table gives the mechanism where one was predicted.",
              f"- **Holm across the rows** keeps {kept} of the {len(t.rows)} verdicts. A row decided at 4 seeds per "
              "cell rests on paired t tests with 3 degrees of freedom, which rarely reach the smallest shares of "
              "alpha; the per-row verdicts keep their own rates at alpha, and the caption bounds the expected "
              "number of false ones."]
    return "\n".join(lines).rstrip() + "\n"


def rerun_section(run: Path, rerun: Path) -> str:
    """Each recipe's verdicts in the atlas run and in a rerun on fresh seeds, and whether they agree."""
    a, b = load_analysis(run / "analysis"), load_analysis(rerun / "analysis")
    seeds = b.grid().seeds if b.grid() is not None else "?"
    lines = ["", "### Rerun on fresh seeds", "",
             f"The same grid with first-look seeds {seeds[:4] if isinstance(seeds, list) else seeds} "
             f"(`python studies/atlas_page.py {run} --rerun {rerun}`):", "",
             "| recipe | verdict | rerun | spread (points) | rerun spread | radial | rerun radial | |",
             "|---|---|---|---|---|---|---|---|"]
    both = agree = 0
    for name in a.pipelines:
        pa, pb = a.pipe(name), b.summary.pipelines.get(name)
        if pb is None:
            continue
        va, vb = marked_verdict(pa), marked_verdict(pb)
        ra = pa.radial.verdict if pa.radial else "-"
        rb = pb.radial.verdict if pb.radial else "-"
        if counts_as_decided(pa) and counts_as_decided(pb):
            both += 1
            agree += va == vb
            mark = "same" if va == vb else "**differs**"
        else:
            mark = "not decided in both"
        spread = [f"{q * a.scale:.1f}" for q in (pa.spread.median, pb.spread.median)]
        lines.append(f"| {name} | {va} | {vb} | {spread[0]} | {spread[1]} | {ra} | {rb} | {mark} |")
    lines += ["", f"Decided in both runs: {both} recipes; the same verdict in {agree} of them."]
    return "\n".join(lines) + "\n"


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("run", type=Path, help="the atlas run folder (initmem run --preset atlas --out RUN)")
    ap.add_argument("--rerun", type=Path, default=None, help="a second atlas run on fresh seeds")
    ap.add_argument("--page", type=Path, default=Path("docs/atlas.md"))
    args = ap.parse_args()
    page = args.page.read_text()
    head = page.split(RESULTS, 1)[0]
    body = results_section(args.run, page)
    if args.rerun is not None:
        body += rerun_section(args.run, args.rerun)
    forest = args.run / "export" / "figures" / "spread-forest.svg"
    if forest.exists():
        (args.page.parent / "atlas-spread-forest.svg").write_bytes(forest.read_bytes())
    args.page.write_text(head + body)
    print(f"wrote {args.page}")


if __name__ == "__main__":
    main()
