"""A user's script: every public function of ``initmem`` and ``initmem.plot``, called correctly.

Checked by mypy against the installed package (tests/test_public_api.py); never run."""

from __future__ import annotations

from pathlib import Path

import matplotlib.figure
import torch
import xarray as xr

import initmem
import initmem.plot as ip

ds: xr.Dataset = initmem.open_cube("runs/quick/cube.nc")
written: Path = initmem.write_cube(ds, "copy.nc")
grid = initmem.load_grid("configs/quick.yaml")
spec = initmem.AnalysisSpec(delta=0.01)
summary = initmem.analyze("runs/quick/cube.nc", "runs/quick/analysis", spec)
summary = initmem.analyze("runs/quick/cube.nc", "runs/quick/analysis", delta=0.01, gate="all", looks=[4, 8], look=1)
result = initmem.run(preset="quick", out_dir=Path("runs/quick"), jobs="auto", spec=spec, looks=(4, 8, 12))
report_path: Path = result.report
cube_path: Path = initmem.collect_cube(grid, "runs/quick", resume=True, jobs=2, pack_size=4, slurm={"mem_gb": 8})
imported = initmem.import_table("runs.csv", "cube.nc", seeds="paired", format="csv", metric_cols=["val_acc"])
imported_ds: xr.Dataset = imported.dataset
html: Path = initmem.report("runs/quick/analysis")
exported = initmem.export("runs/quick/analysis", "paper", formats=("pdf",), width="double")
seeds: dict = initmem.plan("runs/quick/analysis", 0.01, n_sim=100, looks=(4, 8))
sim: xr.Dataset = initmem.simulate_cube([initmem.SimPipeline(name="sgd")], n_test=600)
err: Exception = initmem.UserError("bad input")
net = torch.nn.Sequential(torch.nn.Linear(40, 64), torch.nn.ReLU(), torch.nn.Linear(64, 10))
probed = initmem.apply_probe(net, 2.0, init_seed=0, target="head")
optimizer = torch.optim.SGD(net.parameters(), lr=0.1)
rec = initmem.Recorder(optimizer, net, batch_size=32, coords={"pipeline": "sgd", "sigma_w": 2.0, "seed": 0})
rec.evaluate(0, train=(0.1, 2.3), val=(0.1, 2.3), test=(0.1, 2.3))
rec.step(torch.tensor(2.3))
record: xr.Dataset = rec.dataset()
cell = initmem.load_cell("runs/mine/cells/sgd__sw2.0__seed0/cell.json")
cell_sigma: float = cell.sigma_w
version: str = initmem.__version__

analysis = ip.load_analysis("runs/quick/analysis")
figures: list[matplotlib.figure.Figure] = [
    ip.metric_vs_sigma(analysis), ip.variance_shares(analysis), ip.spread_forest(analysis),
    ip.training_curves(analysis), ip.tau_scatter(analysis), ip.kernel_norms(analysis), ip.rho_curves(analysis),
    ip.clock_panels(analysis), ip.forgetting_times(analysis), ip.forgetting_dose(analysis),
    ip.curves_side_by_side(analysis), ip.ppc_intervals(analysis), ip.crossed_components(analysis),
    ip.init_share_curve(analysis, width=3.5),
]
with ip.style():
    width: float = ip.WIDTHS["single"]
with ip.screen_style():
    pass
about = ip.description(figures[0])
ok: bool = ip.is_figure_function(ip.metric_vs_sigma)
