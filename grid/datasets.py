"""The data sets table: every data set a grid can name, one entry each (torch-free).

A data set's name, size, classes, where its examples come from and how a user gets them are read by the
grid's validation (grid/schema.py: the names a grid accepts, which need ``dataset.root``, which networks fit
the examples), by the loader (collect/train/data.py) and by the docs. Each is a field of one :class:`Dataset`
entry here, so adding a data set is one entry plus, for a new kind of source, its reader (docs/extending.md,
"A new data set").
"""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import TYPE_CHECKING, Literal

# Where a data set's examples come from: scikit-learn's bundled copy, the mnist1d generator, or torchvision's
# on-disk files under dataset.root (read without downloading).
SKLEARN, GENERATED, TORCHVISION = "sklearn", "generated", "torchvision"

GET_TORCHVISION = (
    "download it once with torchvision on a machine with network access, e.g. "
    "python -c \"import torchvision; torchvision.datasets.{cls}('{root}', {kw}download=True)\", "
    "and point dataset.root at that folder"
)


Keywords = dict[str, object]   # a torchvision data set class's keyword arguments


@dataclass(frozen=True)
class Pickles:
    """torchvision's pickled batches of a CIFAR data set, read straight from disk (collect/train/data.py)."""

    folder: str
    train: tuple[str, ...]
    test: tuple[str, ...]
    label_key: str


@dataclass(frozen=True)
class Dataset:
    """One data set a grid can name.

    ``size`` is an example's (height, width); ``sequence`` marks a 1-D signal held as a 1 x length image, which
    the 1-D ResNet and the dense networks take and the 2-D ResNets do not. ``convs`` lists the convolutional
    networks whose stem fits the examples (None: every 2-D ResNet). ``torchvision`` names the torchvision
    class and its train / test keywords; ``pickles`` the CIFAR batches read without torchvision's md5 check.
    ``how_to_get`` is the text a missing or corrupt copy's error ends with.
    """

    name: str
    source: str
    classes: int
    channels: int
    size: tuple[int, int]
    how_to_get: str
    sequence: bool = False
    convs: tuple[str, ...] | None = None
    torchvision: tuple[str, Keywords, Keywords] | None = None
    pickles: Pickles | None = None
    splits: str = field(default="a validation fraction of the training split; the test split as published")

    @property
    def needs_root(self) -> bool:
        """Whether the examples live in a folder the grid must name (``dataset.root``)."""
        return self.source == TORCHVISION


def _tv(cls: str, train: Keywords, test: Keywords) -> tuple[str, Keywords, Keywords]:
    return cls, train, test


_SPLIT = {"train": True}, {"train": False}
DATASETS: tuple[Dataset, ...] = (
    Dataset("digits", SKLEARN, 10, 1, (8, 8), "bundled with scikit-learn: nothing to get",
            convs=("resnet_tiny",),
            splits="a test fraction and a validation fraction of scikit-learn's 1,797 images"),
    Dataset("cifar10", TORCHVISION, 10, 3, (32, 32), GET_TORCHVISION, torchvision=_tv("CIFAR10", *_SPLIT),
            pickles=Pickles("cifar-10-batches-py", tuple(f"data_batch_{i}" for i in range(1, 6)), ("test_batch",),
                            "labels")),
    Dataset("cifar100", TORCHVISION, 100, 3, (32, 32), GET_TORCHVISION, torchvision=_tv("CIFAR100", *_SPLIT),
            pickles=Pickles("cifar-100-python", ("train",), ("test",), "fine_labels")),
    Dataset("fashion_mnist", TORCHVISION, 10, 1, (28, 28), GET_TORCHVISION, torchvision=_tv("FashionMNIST", *_SPLIT)),
    Dataset("svhn", TORCHVISION, 10, 3, (32, 32), GET_TORCHVISION,
            torchvision=_tv("SVHN", {"split": "train"}, {"split": "test"})),
    Dataset("mnist1d", GENERATED, 10, 1, (1, 40), "generated offline by the mnist1d package: nothing to get",
            sequence=True, convs=("resnet1d",),
            splits="three i.i.d. draws of n_train, n_val and n_test examples from the generation seed"),
)
NAMES: tuple[str, ...] = tuple(d.name for d in DATASETS)
BY_NAME: dict[str, Dataset] = {d.name: d for d in DATASETS}

# The type of a grid's dataset.name: the table's names (a plain str to static checkers, which cannot read a
# Literal built from a table).
if TYPE_CHECKING:
    DatasetName = str
else:
    DatasetName = Literal[NAMES]


def dataset(name: str) -> Dataset:
    """The entry of ``name`` (a KeyError names the known ones).

    Examples
    --------
    >>> dataset("mnist1d").size
    (1, 40)
    >>> dataset("cifar10").needs_root
    True
    """
    try:
        return BY_NAME[name]
    except KeyError:
        raise KeyError(f"no data set {name!r}; known: {', '.join(NAMES)}") from None
