"""How ``initmem inspect`` shows a cube description on a terminal (rich tables)."""

from __future__ import annotations

from typing import Any

from rich.console import Console
from rich.table import Table

from initmem import cube


def render_description(info: dict[str, Any], title: str, console: Console | None = None) -> None:
    """Print the dict from :func:`initmem.cube.describe` as a few readable tables."""
    con = console or Console()
    valid = "[green]valid[/green]" if info["valid"] else "[bold red]INVALID[/bold red]"
    con.print(f"[bold]{title}[/bold]  schema={info[cube.A_SCHEMA]!s}  {valid}", highlight=False)
    con.print("dims: " + ", ".join(f"{k}={v}" for k, v in info["dims"].items()), highlight=False)
    if info[cube.SIGMA]:
        con.print(f"{cube.SIGMA}: " + ", ".join(f"{s:g}" for s in info[cube.SIGMA]), highlight=False)
    if info["seeds"]:
        con.print("seeds: " + ", ".join(str(s) for s in info["seeds"]), highlight=False)
    crossed = info.get("crossed")
    if crossed:
        n_init, n_data = len(crossed["init"]), len(crossed["data"])
        full = n_init * n_data == len(info["seeds"])
        con.print(f"crossed: {n_init} init x {n_data} data seeds"
                  + ("" if full else f" ({len(info['seeds'])} of the {n_init * n_data} pairs)")
                  + f" (init {', '.join(map(str, crossed['init']))}; data {', '.join(map(str, crossed['data']))})",
                  highlight=False)

    pipes = info["pipelines"]
    if pipes:
        counts = info["status_counts"]
        table = Table(title="pipelines", title_justify="left")
        table.add_column(cube.PIPELINE, no_wrap=True)
        table.add_column("settings")
        if counts:
            table.add_column("ok/div/fail/miss", justify="right", no_wrap=True)
        for name, vals in pipes.items():
            row = [name, " ".join(f"{k}={_fmt(v)}" for k, v in sorted(vals.items()))]
            if counts:
                row.append(" / ".join(str(counts[name][k]) for k in cube.STATUS_NAMES.values()))
            table.add_row(*row)
        con.print(table)

    for group, names in info["variables"].items():
        if names:
            con.print(f"{group}: " + ", ".join(names), highlight=False)
    if info.get("seed_design") == cube.SEED_INDEPENDENT:
        con.print("seeds: independent across sigma_w (declared on import): a seed number only labels a replicate")
    elif info["seeds_paired"]:
        con.print("seeds: paired across sigma_w (every observed seed is present at every level)")
    else:
        for pipe, seeds in info["unpaired_seeds"].items():
            con.print(f"[yellow]seeds not paired[/yellow] in {pipe}: {seeds} are missing at some sigma_w levels",
                      highlight=False)
    errors = [p for p in info["problems"] if p["severity"] == "error"]
    if errors:
        con.print(f"[bold red]{len(errors)} problem(s):[/bold red]")
        for p in errors:
            con.print(f"  [red]{p['code']}[/red]: {p['message']}", highlight=False)


def _fmt(v: Any) -> str:
    if v is None:
        return "-"
    if isinstance(v, float):
        return f"{v:g}"
    return str(v)
