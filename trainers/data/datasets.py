"""Datasets by name.  Small ones load as uint8 images (N, 3, H, W) at their stored size; imagefolder
and arrays load their file lists and are streamed (``trainers.data.imagefolder``, ``trainers.data.arrays``).

In-memory images stay small and uint8 until they reach the device: conversion, normalisation,
augmentation and resizing to the model's resolution happen there (``trainers.data.batches``),
so a 32x32 CIFAR image crosses the bus as 3 KB, not as a 600 KB float tensor at 224 px.
"""

from __future__ import annotations

import importlib.util
import pickle
from collections.abc import Callable
from dataclasses import dataclass
from pathlib import Path

import numpy as np
import torch

from raysweep.core.errors import UsageError
from trainers.data.arrays import index_arrays
from trainers.data.channel_stats import IMAGE_STATS, ChannelStats
from trainers.data.imagefolder import FolderIndex, check_imagefolder, index_imagefolder


@dataclass
class ImageData:
    """A train and a held-out split: in memory, or an image folder's file list (``folder``);
    ``synthetic`` has neither (made on the device).  ``pad_crop``: CIFAR's random crop after zero padding.
    ``stats``: what the device normalises by (an arrays folder's are measured when its ranks first read it)."""

    num_classes: int
    train_x: torch.Tensor | None = None  # uint8 (N, 3, H, W)
    train_y: torch.Tensor | None = None  # int64 (N,)
    val_x: torch.Tensor | None = None
    val_y: torch.Tensor | None = None
    folder: FolderIndex | None = None
    pad_crop: int = 0
    stats: ChannelStats = IMAGE_STATS

    @property
    def num_train(self) -> int:
        if self.folder is not None:
            return len(self.folder.train)
        return 0 if self.train_y is None else len(self.train_y)


def load_digits(data_dir: str = "", download: bool = False, seed: int = 0) -> ImageData:
    """scikit-learn's bundled 8x8 handwritten digits (1,797 images, 10 classes): real data, no download.

    Read straight from the file scikit-learn ships, without importing scikit-learn (a second
    of every trial's start-up on a small machine).
    """
    package = importlib.util.find_spec("sklearn")
    if package is None:
        raise UsageError("dataset=digits needs scikit-learn installed (pip install scikit-learn)")
    table = np.loadtxt(
        Path(package.submodule_search_locations[0]) / "datasets" / "data" / "digits.csv.gz", delimiter=","
    )
    images = np.round(table[:, :-1].reshape(-1, 8, 8) * (255.0 / 16.0)).astype(np.uint8)
    x = torch.from_numpy(images)[:, None].expand(-1, 3, -1, -1).contiguous()
    y = torch.from_numpy(table[:, -1].astype(np.int64))
    order = torch.randperm(len(y), generator=torch.Generator().manual_seed(seed))
    n_val = len(y) // 5
    val, train = order[:n_val], order[n_val:]
    return ImageData(10, x[train], y[train], x[val], y[val])


def load_synthetic(data_dir: str = "", download: bool = False, seed: int = 0) -> ImageData:
    """Random tensors made on the device at the model's resolution: measures compute alone."""
    return ImageData(num_classes=10)


def read_cifar_batch(path: Path) -> tuple[np.ndarray, np.ndarray]:
    """One file of CIFAR's python format: a pickled dict with ``data`` (N x 3072 uint8) and labels."""
    with open(path, "rb") as f:
        batch = pickle.load(f, encoding="bytes")
    labels = batch.get(b"labels", batch.get(b"fine_labels"))
    return np.asarray(batch[b"data"], dtype=np.uint8).reshape(-1, 3, 32, 32), np.asarray(labels, dtype=np.int64)


CIFAR_LAYOUT = {
    "cifar10": ("cifar-10-batches-py", [f"data_batch_{i}" for i in range(1, 6)], ["test_batch"], 10),
    "cifar100": ("cifar-100-python", ["train"], ["test"], 100),
}


def check_cifar_files(name: str, data_dir: str) -> Path:
    """The extracted python-format archive's folder; a UsageError naming every file it lacks."""
    folder, train_files, val_files, _ = CIFAR_LAYOUT[name]
    root = Path(data_dir) / folder
    missing = [f for f in train_files + val_files if not (root / f).is_file()]
    if missing:
        raise UsageError(
            f"{name}: {root} lacks {', '.join(missing)}; put the extracted python-format archive in "
            f"--data-dir or add --download"
        )
    return root


# CIFAR's standard augmentation pads 4 pixels of zeros and crops back to 32 (with the flip).
CIFAR_PAD_CROP = 4


def load_cifar(name: str, data_dir: str, download: bool) -> ImageData:
    folder, train_files, val_files, classes = CIFAR_LAYOUT[name]
    if not (Path(data_dir) / folder).is_dir() and download:
        from torchvision import datasets

        getattr(datasets, name.upper())(data_dir, train=True, download=True)
    root = check_cifar_files(name, data_dir)

    def stack(files: list[str]) -> tuple[torch.Tensor, torch.Tensor]:
        parts = [read_cifar_batch(root / f) for f in files]
        return torch.from_numpy(np.concatenate([p[0] for p in parts])), torch.from_numpy(
            np.concatenate([p[1] for p in parts])
        )

    return ImageData(classes, *stack(train_files), *stack(val_files), pad_crop=CIFAR_PAD_CROP)


def load_cifar10(data_dir: str, download: bool = False, seed: int = 0) -> ImageData:
    return load_cifar("cifar10", data_dir, download)


def load_cifar100(data_dir: str, download: bool = False, seed: int = 0) -> ImageData:
    return load_cifar("cifar100", data_dir, download)


def load_imagefolder(data_dir: str, download: bool = False, seed: int = 0) -> ImageData:
    """ImageNet style ``train/<class>/*`` and ``val/<class>/*``: the file list only; ranks stream the pixels."""
    index = index_imagefolder(data_dir)
    return ImageData(len(index.classes), folder=index)


def load_arrays(data_dir: str, download: bool = False, seed: int = 0) -> ImageData:
    """Scientific arrays by class folder (``trainers.data.arrays``): the file list and headers; ranks stream the
    values."""
    index = index_arrays(data_dir)
    return ImageData(len(index.classes), folder=index)


DATASETS: dict[str, Callable[..., ImageData]] = {
    "digits": load_digits,
    "synthetic": load_synthetic,
    "cifar10": load_cifar10,
    "cifar100": load_cifar100,
    "imagefolder": load_imagefolder,
    "arrays": load_arrays,
}
# datasets of 8-bit images, read in 1 or 3 channels; the others' channels are the data's own
IMAGE_DATASETS = ("digits", "synthetic", "cifar10", "cifar100", "imagefolder")


def check_data_dir(name: str, data_dir: str, download: bool, in_chans: int = 3) -> None:
    """Before anything starts: the files a dataset reads are where the trial will look for them, readable,
    and (arrays) of the channel count the model takes."""
    if name in CIFAR_LAYOUT and not download:
        check_cifar_files(name, data_dir)
    if name == "imagefolder":
        check_imagefolder(data_dir)
    if name == "arrays":
        channels = index_arrays(data_dir).train.channels
        if channels != in_chans:
            raise UsageError(
                f"in_chans={in_chans} but the arrays in {data_dir} hold {channels} channels; set in_chans={channels}"
            )


def load_dataset(name: str, data_dir: str = "", download: bool = False, seed: int = 0) -> ImageData:
    return DATASETS[name](data_dir, download=download, seed=seed)
