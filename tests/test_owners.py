"""One owner per name: a vocabulary or constant that several modules share is defined in one module.

The test reads the source tree (not tests/ or benchmarks/) with ``ast`` and fails when a shared
name is defined a second time: the verdict names, the error rate ALPHA, the R-hat / ESS goals and
their flags, the interpolation threshold, the analysis- and run-folder file names, the curves.nc
variables, the optimizer kinds, the clock labels, the schedule clocks, the presets and the report
sections, and cube variable names spelled as strings in the simulator. Owners: initmem/names.py,
grid/schema.py, grid/file.py, optimizers.py, clocks.py, cube/schema.py, results/records.py,
reports/sections.py (docs/architecture.md). The house rules beside them: no import cycle, at most 12
modules at the package root, and no module ``__getattr__`` outside a package ``__init__``.
"""

from __future__ import annotations

import ast
from pathlib import Path

from initmem import clocks, cube, names, optimizers

ROOT = Path(__file__).resolve().parents[1]
SKIP_DIRS = {"tests", "benchmarks", "studies", ".venv", "build", "runs", "site"}

def _modules() -> dict[str, ast.Module]:
    out = {}
    for path in sorted(ROOT.rglob("*.py")):
        rel = path.relative_to(ROOT)
        if rel.parts[0] in SKIP_DIRS or any(p.startswith(".") for p in rel.parts):
            continue
        out[rel.as_posix()] = ast.parse(path.read_text(encoding="utf-8"))
    return out


MODULES = _modules()
NODES = {rel: list(ast.walk(tree)) for rel, tree in MODULES.items()}


def _docstrings(tree: ast.Module) -> set[int]:
    ids = set()
    for node in ast.walk(tree):
        if isinstance(node, ast.Module | ast.ClassDef | ast.FunctionDef | ast.AsyncFunctionDef) and node.body:
            first = node.body[0]
            if isinstance(first, ast.Expr) and isinstance(first.value, ast.Constant):
                ids.add(id(first.value))
    return ids


def _collections(rel: str):
    """Every tuple / list / set / dict literal and every ``Literal[...]`` subscript of a module."""
    for node in NODES[rel]:
        if isinstance(node, ast.Tuple | ast.List | ast.Set | ast.Dict):
            yield node
        elif isinstance(node, ast.Subscript) and isinstance(node.value, ast.Name) and node.value.id == "Literal":
            yield node


def _vocabulary_sites(vocab: tuple[str, ...], min_hits: int = 2) -> set[str]:
    """Modules with a collection literal holding at least ``min_hits`` words of ``vocab``."""
    found = set()
    for rel in MODULES:
        for node in _collections(rel):
            if isinstance(node, ast.Dict):
                items = node.keys
            elif isinstance(node, ast.Subscript):
                items = node.slice.elts if isinstance(node.slice, ast.Tuple) else [node.slice]
            else:
                items = node.elts
            words = [i.value for i in items if isinstance(i, ast.Constant) and isinstance(i.value, str)]
            if len(set(words) & set(vocab)) >= min_hits:
                found.add(rel)
    return found


def _assigned(name: str) -> set[str]:
    """Modules that assign ``name`` a literal value (a derived value such as a registry lookup is fine)."""
    found = set()
    for rel in MODULES:
        for node in NODES[rel]:
            if isinstance(node, ast.Assign | ast.AnnAssign) and node.value is not None:
                targets = node.targets if isinstance(node, ast.Assign) else [node.target]
                for t in targets:
                    tnames = [t] if isinstance(t, ast.Name) else (t.elts if isinstance(t, ast.Tuple) else [])
                    if any(isinstance(n, ast.Name) and n.id == name for n in tnames) and _is_literal(node.value):
                        found.add(rel)
    return found


def _is_literal(node: ast.AST) -> bool:
    try:
        ast.literal_eval(node)
        return True
    except ValueError:
        return False


def test_verdict_names_have_one_owner():
    assert _vocabulary_sites(names.VERDICTS) == {"names.py"}
    template = (ROOT / "reports" / "templates" / "report.html.j2").read_text(encoding="utf-8")
    assert '"remembers", "forgets"' not in template


def test_sampler_goals_and_the_interpolation_threshold_have_one_owner():
    for name in ("RHAT_MAX", "ESS_MIN"):
        assert _assigned(name) == {"names.py"}, name
    sites = {rel for rel in MODULES for n in NODES[rel]
             if isinstance(n, ast.Constant) and n.value == 0.995}
    assert sites == {"grid/schema.py"}


def test_folder_layout_and_curves_variables_have_one_owner():
    words = {names.SUMMARY_JSON, names.COLLAPSE_JSON, names.CURVES_NC, names.POSTERIOR_NC, names.REPORT_HTML,
             names.CUBE_NC, names.EVENTS_JSONL, names.CURVE_EPOCH_AXIS, names.CURVE_RHO, names.CURVE_RHO_Q05,
             names.CURVE_RHO_Q95, names.CURVE_FUNC_SPREAD, names.CURVE_FUNC_SHARE, names.CURVE_FS_MEMORY}
    for rel, tree in MODULES.items():
        if rel == "names.py":
            continue
        docs = _docstrings(tree)
        spelled = {n.value for n in NODES[rel] if isinstance(n, ast.Constant) and n.value in words
                   and id(n) not in docs}
        assert not spelled, (rel, spelled)


def test_optimizer_kinds_clock_labels_and_sections_have_one_owner():
    assert _vocabulary_sites(optimizers.names()) == set()  # the table builds OptimizerKind entries
    for name in ("OPTIMIZERS", "ADAPTIVE", "OPTIMIZER_NAMES"):
        assert _assigned(name) <= {"optimizers.py"}, name
    assert _vocabulary_sites(tuple(c.label for c in clocks.CLOCKS), 1) == set()  # labels: built by clocks.py
    for name in ("AXIS_LABELS", "TRUTH_AXES", "SECTIONS", "FIGURES"):
        assert not _assigned(name), name


def test_simulate_spells_no_cube_variable():
    tree = MODULES["simulate/draw.py"]
    docs = _docstrings(tree)
    variables = (set(cube.known_variables()) | {cube.A_TRUTH}) - {cube.STEP}  # "step" is also a schedule name
    spelled = sorted({n.value for n in ast.walk(tree) if isinstance(n, ast.Constant) and n.value in variables
                      and id(n) not in docs})
    assert not spelled


def test_alpha_schedule_clocks_presets_and_sampler_flags_have_one_owner():
    assert _assigned("ALPHA") == {"names.py"}
    for name in ("SCHEDULE_CLOCKS", "PRESETS"):
        owners = {rel for rel in MODULES for n in NODES[rel] if isinstance(n, ast.Assign)
                  and any(isinstance(t, ast.Name) and t.id == name for t in n.targets)}
        assert len(owners) == 1, (name, owners)
    # The R-hat / ESS goals are compared against in one function (results/records.py: sampler_flags).
    compares = {rel for rel in MODULES for n in NODES[rel] if isinstance(n, ast.Compare)
                and any(isinstance(x, ast.Name) and x.id in ("RHAT_MAX", "ESS_MIN") for x in [n.left, *n.comparators])}
    assert compares == {"results/records.py"}


def test_the_root_keeps_few_modules_and_no_module_getattr_shims():
    root = sorted(p.name for p in ROOT.glob("*.py"))
    assert len(root) <= 12, root
    def defines_getattr(node: ast.stmt) -> bool:
        if isinstance(node, ast.FunctionDef):
            return node.name == "__getattr__"
        return isinstance(node, ast.Assign) and any(isinstance(t, ast.Name) and t.id == "__getattr__"
                                                    for t in node.targets)

    shims = {rel for rel, tree in MODULES.items()
             if not rel.endswith("__init__.py") and any(defines_getattr(n) for n in tree.body)}
    assert not shims


def test_no_import_cycle_counting_imports_inside_functions():
    import grimp
    import networkx as nx

    # imports under TYPE_CHECKING never run (the package's names for type checkers): not part of the graph
    graph = grimp.build_graph("initmem", include_external_packages=False, exclude_type_checking_imports=True)
    g = nx.DiGraph()
    for m in graph.modules:
        if not m.startswith("initmem.tests"):
            g.add_node(m)
            g.add_edges_from((m, i) for i in graph.find_modules_directly_imported_by(m)
                             if not i.startswith("initmem.tests"))
    assert g.number_of_nodes() > 90  # the graph saw the package
    cycles = [sorted(c) for c in nx.strongly_connected_components(g) if len(c) > 1]
    assert not cycles


def test_library_messages_name_options_not_flags():
    """Outside cli/ a hint names the option (initmem.errors.option); the command line spells the flag."""
    import re

    flag = re.compile(r"(?<![\w-])--[a-z]")
    spelled = []
    for rel, tree in MODULES.items():
        if rel.startswith("cli/"):
            continue
        docs = _docstrings(tree)
        spelled += [(rel, n.lineno, n.value[:60]) for n in NODES[rel] if isinstance(n, ast.Constant)
                    and isinstance(n.value, str) and id(n) not in docs and flag.search(n.value)]
    assert not spelled


def test_an_option_is_a_keyword_from_python_and_a_flag_on_the_command_line():
    from initmem.cli.params import option_flag
    from initmem.errors import option, options_as_flags

    cases = [(("resume", True), "resume=True", "--resume"), (("n_test", 500), "n_test=500", "--n-test 500"),
             (("metric_cols", "loss"), "metric_cols='loss'", "--metric-col loss"), (("format",), "format", "--format")]
    for args, python, flag in cases:
        assert option(*args) == python
        with options_as_flags(option_flag):
            assert option(*args) == flag
        assert option(*args) == python  # only within the block


def test_every_report_section_is_one_entry_and_one_partial():
    """The page's frame draws no section itself; each partial draws exactly its own section."""
    import re

    from initmem.reports import sections

    templates = ROOT / "reports" / "templates"
    assert not re.search(r"<section id=\"sec-", (templates / "report.html.j2").read_text(encoding="utf-8"))
    on_disk = {p.name for p in (templates / "sections").glob("*.html.j2")}
    assert on_disk == {s.partial for s in sections.SECTIONS}  # no partial without an entry, and back
    for s in sections.SECTIONS:
        text = (templates / "sections" / s.partial).read_text(encoding="utf-8")
        assert re.findall(r"<section id=\"sec-(\w+)\"", text) == [s.id], s.partial
        assert f"section_number.{s.id}" in text, s.partial  # numbered from the table, not by hand
