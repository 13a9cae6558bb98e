"""The recorder's PyTorch Lightning callback against the real package (CPU, a few batches, no network): a run
records epochs 0..E with the logged split metrics, the test predictions, the optimizer's steps as clocks and the
kernel norms of the weights the module ends with."""

from __future__ import annotations

import math

import numpy as np
import pytest
import torch
import torch.nn.functional as F
from torch import nn
from torch.utils.data import DataLoader, TensorDataset

from initmem import clocks, cube
from initmem.collect.custom.probe import apply_probe

pl = pytest.importorskip("pytorch_lightning")
from initmem.collect.custom.lightning import RecorderCallback  # noqa: E402

pytestmark = pytest.mark.usefixtures("one_torch_thread")  # tests/conftest.py

SPLITS = ("train", "val", "test")
LR, BATCHES, EPOCHS, B = 0.05, 3, 2, 16


def data(seed: int, n: int) -> TensorDataset:
    g = torch.Generator().manual_seed(seed)
    x = torch.randn(n, 12, generator=g)
    return TensorDataset(x, (x[:, 0] > 0).long() + (x[:, 1] > 0).long())


class LayerNormMLP(pl.LightningModule):
    def __init__(self):
        super().__init__()
        self.net = nn.Sequential(nn.Linear(12, 32, bias=False), nn.LayerNorm(32), nn.ReLU(), nn.Linear(32, 3))
        self.sets = {s: data(i, 64 if s == "train" else 40) for i, s in enumerate(SPLITS)}
        self.preds: list[torch.Tensor] = []
        self.test_predictions: torch.Tensor | None = None
        self.logged: list[dict[str, float]] = []

    def forward(self, x):
        return self.net(x)

    def training_step(self, batch, _idx):
        x, y = batch
        return F.cross_entropy(self(x), y)

    def validation_step(self, batch, _idx, dataloader_idx=0):
        x, y = batch
        logits = self(x)
        split = SPLITS[dataloader_idx]
        self.log(f"{split}_loss", F.cross_entropy(logits, y), add_dataloader_idx=False, batch_size=len(y))
        self.log(f"{split}_acc", (logits.argmax(-1) == y).float().mean(), add_dataloader_idx=False, batch_size=len(y))
        if split == "test":
            self.preds.append(logits.argmax(-1))

    def on_validation_epoch_end(self):
        self.test_predictions, self.preds = torch.cat(self.preds), []

    def train_dataloader(self):
        return DataLoader(self.sets["train"], batch_size=B, shuffle=False)

    def val_dataloader(self):
        return [DataLoader(self.sets[s], batch_size=20) for s in SPLITS]

    def configure_optimizers(self):
        opt = torch.optim.SGD(self.parameters(), lr=LR, momentum=0.9)
        return {"optimizer": opt, "lr_scheduler": torch.optim.lr_scheduler.StepLR(opt, step_size=1, gamma=0.5)}


def trainer(callback, **kw):
    return pl.Trainer(max_epochs=EPOCHS, limit_train_batches=BATCHES, accelerator="cpu", devices=1, logger=False,
                      enable_checkpointing=False, enable_progress_bar=False, enable_model_summary=False,
                      num_sanity_val_steps=-1, callbacks=[callback], **kw)


def test_a_lightning_run_is_recorded_as_a_plain_loop_would_be(tmp_path):
    torch.manual_seed(0)
    module = LayerNormMLP()
    apply_probe(module, 2.0, init_seed=5)
    test_y = module.sets["test"].tensors[1]
    cb = RecorderCallback(tmp_path / "run.nc", batch_size=B, test_labels=test_y,
                          coords={"pipeline": "lightning", "sigma_w": 2.0, "seed": 5})
    trainer(cb).fit(module)
    ds = cube.open_cube(tmp_path / "run.nc")
    at = {v: ds[v].values[0, 0, 0] for v in ds.data_vars if ds[v].dims[:3] == cube.CELL_DIMS}
    assert list(ds[cube.EPOCH].values) == [0, 1, 2] and ds.attrs["run_complete"] == 1
    assert int(at[cube.STATUS]) == cube.OK
    assert np.isfinite(at[cube.TEST_ACC]).all() and np.isfinite(at[cube.TRAIN_LOSS]).all()   # epoch 0: sanity check
    # the clocks: 3 steps at 0.05 then 3 at 0.025 (StepLR per epoch), heavy-ball 0.9
    np.testing.assert_array_equal(at[clocks.STEP], [0, 3, 6])
    np.testing.assert_allclose(at[clocks.T_ETA], [0, 3 * LR, 3 * LR + 3 * LR / 2], rtol=1e-6)
    np.testing.assert_allclose(at[clocks.T_ETA_MOM], 10 * at[clocks.T_ETA], rtol=1e-6)
    np.testing.assert_allclose(at[clocks.T_SGD], [0, 3 * LR**2 / B, 3 * LR**2 / B + 3 * (LR / 2) ** 2 / B], rtol=1e-6)
    assert at[clocks.T_ADAPT][-1] == 0 and at[clocks.T_WD][-1] == 0
    # the kernel norms at the last epoch are those of the weights the module ends with
    final = [module.net[0].weight, module.net[3].weight]
    np.testing.assert_allclose(at[cube.LAYER_NORM][-1], [float(w.detach().norm()) for w in final], rtol=1e-6)
    assert list(ds[cube.LAYER].values) == ["net.0", "net.3"]
    # the first kernel feeds a LayerNorm (eta / ||w||^2 defined), the head does not
    assert np.isfinite(at[cube.EFF_LR][:, 0]).all() and np.isnan(at[cube.EFF_LR][:, 1]).all()
    # the logged metrics and the selected epoch's predictions
    logged = float(module.trainer.callback_metrics["test_acc"])
    assert math.isclose(at[cube.TEST_ACC][-1], logged, rel_tol=1e-6)
    pred = ds[cube.TEST_PRED].values[0, 0, 0]
    assert (pred >= 0).all() and len(pred) == len(test_y)
    assert int(at[cube.SELECTED_TEST_CORRECT]) == int((torch.as_tensor(pred) == test_y).sum())


def test_without_a_full_sanity_check_epoch_0_has_norms_and_clocks_only(tmp_path):
    torch.manual_seed(0)
    module = LayerNormMLP()
    cb = RecorderCallback(batch_size=B)
    t = pl.Trainer(max_epochs=EPOCHS, limit_train_batches=BATCHES, accelerator="cpu", devices=1, logger=False,
                   enable_checkpointing=False, enable_progress_bar=False, enable_model_summary=False,
                   num_sanity_val_steps=0, check_val_every_n_epoch=2, callbacks=[cb])
    t.fit(module)
    ds = cb.recorder.dataset()
    acc = ds[cube.VAL_ACC].values[0, 0, 0]
    assert list(ds[cube.EPOCH].values) == [0, 1, 2]
    assert np.isnan(acc[:2]).all() and np.isfinite(acc[2])            # validated at epoch 2 only
    assert np.isfinite(ds[cube.KERNEL_NORM].values[0, 0, 0]).all()


def test_a_run_resumed_from_a_lightning_checkpoint_continues_its_record(tmp_path):
    def fit(epochs, ckpt=None, every=None):
        torch.manual_seed(0)
        module = LayerNormMLP()
        apply_probe(module, 2.0, init_seed=5)
        cb = RecorderCallback(batch_size=B, coords={"pipeline": "lightning", "sigma_w": 2.0, "seed": 5})
        extra = [pl.callbacks.ModelCheckpoint(dirpath=tmp_path, save_last=True)] if every else []
        t = pl.Trainer(max_epochs=epochs, limit_train_batches=BATCHES, accelerator="cpu", devices=1, logger=False,
                       enable_checkpointing=bool(every), enable_progress_bar=False, enable_model_summary=False,
                       num_sanity_val_steps=-1, callbacks=[cb, *extra])
        t.fit(module, ckpt_path=ckpt)
        return cb.recorder.dataset()

    whole = fit(EPOCHS)
    fit(1, every=1)                                       # a run stopped after epoch 1, with its checkpoint
    resumed = fit(EPOCHS, ckpt=str(tmp_path / "last.ckpt"))
    assert list(resumed[cube.EPOCH].values) == [0, 1, 2]
    for v in whole.data_vars:
        if v != cube.WALL_SECONDS:
            np.testing.assert_array_equal(resumed[v].values, whole[v].values, err_msg=v)
