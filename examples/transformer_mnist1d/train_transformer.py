"""A small transformer classifier on MNIST-1D, trained with PyTorch Lightning, as one cell of an initmem grid.

``initmem`` calls :func:`main` once per (pipeline, sigma_w, seed) with a cell (``entry:
"train_transformer:main"`` in grid.yaml). The training is an ordinary ``LightningModule`` and ``Trainer``;
what makes it an initmem run is marked ``# initmem``:

* the kernels are drawn by the sigma_w probe from the cell's init seed (``cell.apply_probe``, i.e.
  ``initmem.apply_probe(model, cell.sigma_w, init_seed=cell.init_seed, ...)``): every ``Linear`` weight and
  the attention's input projections; the positional embedding and the LayerNorms are left as built;
* initmem's Lightning callback, :class:`initmem.collect.custom.lightning.RecorderCallback`, writes the run record
  where the grid collects it, stamped with the cell's coordinates and the grid's checkpoint rule. It reads the
  split metrics the module logs (``train_acc``/``train_loss``, ``val_*``, ``test_*``) after each validation,
  which runs over the three splits (three validation loaders), and the test predictions the module keeps in
  ``test_predictions``; ``num_sanity_val_steps=-1`` makes the sanity check a full evaluation at epoch 0.

Data: MNIST-1D (Greydanus & Kobak, 2024), 40-point 1-D signals of ten digit templates, generated offline by
the ``mnist1d`` package's generator through initmem's cache (the data the built-in ``quick`` preset trains on:
``dataset.seed`` 0, the splits in this order). Each signal is cut into ``patch``-point patches, the tokens.
"""

from __future__ import annotations

import logging
import warnings
from typing import Any

import pytorch_lightning as pl
import torch
from torch import nn
from torch.nn import functional as F
from torch.utils.data import DataLoader, TensorDataset

from initmem.collect.custom.cell import Cell
from initmem.collect.custom.lightning import RecorderCallback
from initmem.collect.train.mnist1d_gen import load as load_mnist1d
from initmem.grid import DatasetSpec

SPLITS = ("train", "val", "test")
LENGTH, CLASSES = 40, 10


class TransformerClassifier(nn.Module):
    """Patches of the signal -> linear embedding + learned positions -> pre-norm ``nn.TransformerEncoder`` ->
    LayerNorm -> mean over tokens -> linear head."""

    def __init__(self, patch: int = 4, d_model: int = 32, heads: int = 4, layers: int = 2, ff: int = 64):
        super().__init__()
        if LENGTH % patch:
            raise ValueError(f"settings.patch: {patch} does not divide the signal length {LENGTH}")
        self.patch = patch
        self.embed = nn.Linear(patch, d_model)
        self.position = nn.Parameter(0.02 * torch.randn(1, LENGTH // patch, d_model))
        layer = nn.TransformerEncoderLayer(d_model, heads, dim_feedforward=ff, dropout=0.0, batch_first=True,
                                           norm_first=True)
        self.encoder = nn.TransformerEncoder(layer, layers, enable_nested_tensor=False)
        self.norm = nn.LayerNorm(d_model)
        self.head = nn.Linear(d_model, CLASSES)    # the last kernel: the probe gives it gain 1

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        tokens = self.embed(x.view(len(x), -1, self.patch)) + self.position
        return self.head(self.norm(self.encoder(tokens)).mean(dim=1))


class Mnist1dModule(pl.LightningModule):
    """The Lightning side: one optimizer (``settings.optimizer``: ``adam`` or ``adamw``), an optional cosine
    schedule per step, the three splits as validation loaders with their metrics logged under the names the
    recorder's callback reads."""

    def __init__(self, model: nn.Module, data: dict[str, TensorDataset], settings: dict[str, Any],
                 data_seed: int):
        super().__init__()
        self.model, self.data, self.settings, self.data_seed = model, data, settings, data_seed
        self.batch_size = int(settings["batch_size"])
        self._preds: list[torch.Tensor] = []
        self.test_predictions: torch.Tensor | None = None

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        return self.model(x)

    def training_step(self, batch: tuple[torch.Tensor, torch.Tensor], batch_idx: int) -> torch.Tensor:  # noqa: ARG002
        x, y = batch
        return F.cross_entropy(self(x), y)

    def validation_step(self, batch: tuple[torch.Tensor, torch.Tensor], batch_idx: int,  # noqa: ARG002
                        dataloader_idx: int = 0) -> None:
        x, y = batch
        logits = self(x)
        split = SPLITS[dataloader_idx]
        self.log(f"{split}_loss", F.cross_entropy(logits, y), add_dataloader_idx=False, batch_size=len(y))
        self.log(f"{split}_acc", (logits.argmax(-1) == y).float().mean(), add_dataloader_idx=False,
                 batch_size=len(y))
        if split == "test":
            self._preds.append(logits.argmax(-1))

    def on_validation_epoch_end(self) -> None:
        self.test_predictions, self._preds = torch.cat(self._preds), []

    def train_dataloader(self) -> DataLoader:
        order = torch.Generator().manual_seed(self.data_seed)    # data order from the cell's data seed
        return DataLoader(self.data["train"], batch_size=self.batch_size, shuffle=True, generator=order)

    def val_dataloader(self) -> list[DataLoader]:
        return [DataLoader(self.data[s], batch_size=2000) for s in SPLITS]

    def configure_optimizers(self) -> Any:
        s = self.settings
        kind, lr, wd = s["optimizer"], float(s["lr"]), float(s.get("weight_decay", 0.0))
        if kind == "adam":
            opt: torch.optim.Optimizer = torch.optim.Adam(self.parameters(), lr=lr, weight_decay=wd)
        elif kind == "adamw":
            opt = torch.optim.AdamW(self.parameters(), lr=lr, weight_decay=wd)
        else:
            raise ValueError(f"settings.optimizer: {kind!r} (adam or adamw)")
        if s.get("schedule", "constant") != "cosine":
            return opt
        steps = int(s["epochs"]) * -(-len(self.data["train"]) // self.batch_size)
        cosine = torch.optim.lr_scheduler.CosineAnnealingLR(opt, T_max=steps)
        return {"optimizer": opt, "lr_scheduler": {"scheduler": cosine, "interval": "step"}}


def load_data(settings: dict[str, Any]) -> dict[str, TensorDataset]:
    """MNIST-1D's three splits (``n_train``, ``n_val``, ``n_test``; generator seed ``data_set_seed``)."""
    spec = DatasetSpec(name="mnist1d", n_train=int(settings["n_train"]), n_val=int(settings["n_val"]),
                       n_test=int(settings["n_test"]), seed=int(settings.get("data_set_seed", 0)))
    arrays = load_mnist1d(spec)
    return {split: TensorDataset(torch.as_tensor(arrays[2 * i]), torch.as_tensor(arrays[2 * i + 1]))
            for i, split in enumerate(SPLITS)}


def main(cell: Cell) -> None:
    """Train one cell with Lightning (module docstring)."""
    for name in ("pytorch_lightning", "lightning.pytorch", "lightning_fabric"):
        logging.getLogger(name).setLevel(logging.ERROR)       # no banner per cell
    warnings.filterwarnings("ignore", message=".*(does not have many workers|num_workers).*")
    s = cell.settings
    data = load_data(s)
    torch.manual_seed(cell.init_seed)                          # the positional embedding follows the init seed
    model = TransformerClassifier(patch=int(s.get("patch", 4)), d_model=int(s.get("d_model", 32)),
                                  heads=int(s.get("heads", 4)), layers=int(s.get("layers", 2)),
                                  ff=int(s.get("ff", 64)))
    cell.apply_probe(model)                                    # initmem: sigma_w x Kaiming kernels, from init_seed
    module = Mnist1dModule(model, data, s, cell.data_seed)
    callback = RecorderCallback(                               # initmem: the recorder as a Lightning callback
        cell.record, coords=dict(cell.coords), measure_clocks=cell.measure_clocks, **cell.eval,
        batch_size=int(s["batch_size"]), test_labels=data["test"].tensors[1], checkpoint=False)
    trainer = pl.Trainer(max_epochs=int(s["epochs"]), accelerator="gpu" if cell.device.startswith("cuda") else "cpu",
                         devices=1, logger=False, enable_checkpointing=False, enable_progress_bar=False,
                         enable_model_summary=False, num_sanity_val_steps=-1, callbacks=[callback])
    trainer.fit(module)
