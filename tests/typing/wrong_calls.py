"""One deliberately wrong call per public function of ``initmem`` and ``initmem.plot``.

tests/test_public_api.py runs mypy on this file against the installed package and asserts that the checker
reports every line marked ``# wrong``: the real signatures reach it, not ``Any``. Never run."""

from __future__ import annotations

import initmem
import initmem.plot as ip

initmem.open_cube(42)  # wrong
initmem.write_cube("not a dataset", "copy.nc")  # wrong
initmem.load_grid(configs="configs/quick.yaml")  # wrong
initmem.AnalysisSpec(delta="one point")  # wrong
initmem.analyze("cube.nc", "analysis", delt=0.01)  # wrong
initmem.run(preset="quick", jobs="many")  # wrong
initmem.collect_cube("configs/quick.yaml", "runs/quick", resum=True)  # wrong
initmem.import_table("runs.csv", "cube.nc")  # wrong
initmem.report("runs/quick/analysis", formats="pdf")  # wrong
initmem.export("runs/quick/analysis")  # wrong
initmem.plan("runs/quick/analysis", n_sims=100)  # wrong
initmem.simulate_cube(["sgd"])  # wrong
initmem.SimPipeline(nme="sgd")  # wrong
initmem.UserError(1, 2, 3).add_note(4)  # wrong
initmem.apply_probe("model", 2.0, init_seed=0)  # wrong
initmem.Recorder("optimizer", "model", batch_size=32)  # wrong
initmem.load_cell(3.5)  # wrong
ip.load_analysis(3.5)  # wrong
ip.metric_vs_sigma("runs/quick/analysis", width="wide")  # wrong
ip.variance_shares()  # wrong
ip.spread_forest("a", "b")  # wrong
ip.training_curves("a", colour="red")  # wrong
ip.tau_scatter(None)  # wrong
ip.kernel_norms("a", ax=None, width=[1.0])  # wrong
ip.rho_curves(1)  # wrong
ip.clock_panels(b"a")  # wrong
ip.forgetting_times("a", dpi=300)  # wrong
ip.forgetting_dose("a", 2.0)  # wrong
ip.curves_side_by_side(pipelines=["sgd"])  # wrong
ip.ppc_intervals({"a": 1})  # wrong
ip.crossed_components("a", width="single")  # wrong
ip.init_share_curve()  # wrong
ip.style("paper")  # wrong
ip.screen_style(1)  # wrong
ip.description("fig")  # wrong
ip.is_figure_function()  # wrong
