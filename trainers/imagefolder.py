"""ImageNet-style ``train/<class>/*`` and ``val/<class>/*`` folders, streamed at the model's resolution.

Only the file list lives in memory; each rank's DataLoader workers read, decode and crop its shard of
an epoch (timm/torchvision recipes), so memory per rank is bounded by the prefetch depth whatever the
folder's size.  The GPU path reads JPEG bytes in the workers and decodes a whole micro batch with
nvJPEG on the device (``torchvision.io.decode_jpeg(list, device="cuda")``), then crops it in one call
(``trainers.crops.crop_batch``).
"""

from __future__ import annotations

from dataclasses import dataclass
from pathlib import Path
from typing import Protocol

import torch
from torch.utils.data import Dataset

from raysweep.core.errors import UsageError
from trainers.crops import CropRecipe, back_to_back, crop_images, train_crop, val_crop

IMAGE_SUFFIXES = (".jpg", ".jpeg", ".png", ".bmp", ".gif", ".tif", ".tiff", ".webp", ".ppm", ".pgm")
JPEG_SUFFIXES = (".jpg", ".jpeg")


class Split(Protocol):
    """A split's images by position: a folder's files (``FolderSplit``) or a pixel copy (``PixelSplit``)."""

    labels: list[int]

    def __len__(self) -> int: ...

    def read(self, i: int, in_chans: int) -> torch.Tensor: ...


@dataclass
class FolderSplit:
    """One split's files (sorted by class, then name) and their class indices."""

    files: list[str]
    labels: list[int]

    def __len__(self) -> int:
        return len(self.files)

    def read(self, i: int, in_chans: int) -> torch.Tensor:
        return decode_file(self.files[i], in_chans)


@dataclass
class FolderIndex:
    classes: list[str]
    train: Split
    val: Split


def image_files(folder: Path, suffixes: tuple[str, ...] = IMAGE_SUFFIXES) -> list[str]:
    return sorted(str(p) for p in folder.iterdir() if p.is_file() and p.suffix.lower() in suffixes)


def index_imagefolder(
    data_dir: str, suffixes: tuple[str, ...] = IMAGE_SUFFIXES, dataset: str = "imagefolder"
) -> FolderIndex:
    """The file list of both splits; a UsageError of one line naming the folder for each layout fault.

    ``suffixes`` are the files a class folder holds (``dataset`` names the layout in the messages).
    """
    root = Path(data_dir)
    splits = {name: root / name for name in ("train", "val")}
    for name, split in splits.items():
        if not split.is_dir():
            raise UsageError(f"{dataset}: {root} has no {name}/ folder (needs train/<class>/ and val/<class>/)")
    class_sets = {name: sorted(d.name for d in split.iterdir() if d.is_dir()) for name, split in splits.items()}
    if not class_sets["train"]:
        raise UsageError(f"{dataset}: {splits['train']} has no class folders")
    if class_sets["train"] != class_sets["val"]:
        only_train = sorted(set(class_sets["train"]) - set(class_sets["val"]))
        only_val = sorted(set(class_sets["val"]) - set(class_sets["train"]))
        raise UsageError(
            f"{dataset}: class folders of {splits['train']} and {splits['val']} differ "
            f"(only in train: {only_train[:5]}, only in val: {only_val[:5]})"
        )
    classes = class_sets["train"]
    read = {}
    for name, split in splits.items():
        files, labels = [], []
        for label, cls in enumerate(classes):
            found = image_files(split / cls, suffixes)
            if not found:
                raise UsageError(f"{dataset}: class folder {split / cls} has no images ({', '.join(suffixes)})")
            files += found
            labels += [label] * len(found)
        read[name] = FolderSplit(files, labels)
    return FolderIndex(classes, read["train"], read["val"])


def check_imagefolder(data_dir: str) -> None:
    """Before any trial starts (the planner calls it): the folder's layout, one line per fault."""
    index_imagefolder(data_dir)


def decode_file(path: str, in_chans: int) -> torch.Tensor:
    """uint8 (in_chans, H, W) from any format torchvision or PIL decodes; grey, CMYK and palettes converted.

    A file neither can decode raises a UsageError naming it: a corrupt input stops the trial rather
    than silently shrinking the split.
    """
    from torchvision.io import ImageReadMode, decode_image

    mode = ImageReadMode.GRAY if in_chans == 1 else ImageReadMode.RGB
    try:
        return decode_image(path, mode=mode)
    except (RuntimeError, ValueError):
        pass  # formats libjpeg/libpng of torchvision reject (some CMYK, TIFF, odd GIFs): PIL next
    try:
        import numpy as np
        from PIL import Image

        with Image.open(path) as img:
            pixels = np.asarray(img.convert("L" if in_chans == 1 else "RGB"))
    except Exception as e:  # PIL raises many types for damaged files; each means the same here
        raise UsageError(f"imagefolder: cannot decode {path}: {e}") from e
    pixels = pixels[None] if pixels.ndim == 2 else pixels.transpose(2, 0, 1)
    return torch.from_numpy(pixels.copy())


class DecodedImages(Dataset):
    """CPU path: ``(uint8 (C, size, size), label)``; a training sample's crop is drawn from (seed, epoch, index)."""

    def __init__(self, split: Split, size: int, in_chans: int, recipe: CropRecipe | None, seed: int):
        self.split, self.size, self.in_chans, self.recipe, self.seed = split, size, in_chans, recipe, seed
        self.epoch = 0

    def __len__(self) -> int:
        return len(self.split)

    def __getitem__(self, i: int) -> tuple[torch.Tensor, int]:
        image = self.split.read(i, self.in_chans)
        if self.recipe is None:
            return val_crop(image, self.size), self.split.labels[i]
        # a generator per sample: the crop does not depend on which worker process decodes it
        generator = torch.Generator().manual_seed(hash((self.seed, self.epoch, i)) & (2**63 - 1))
        return train_crop(image, self.size, self.recipe, generator), self.split.labels[i]


class EncodedImages(Dataset):
    """GPU path: the file's bytes (uint8 1-D) and its label; decoded in batches on the device."""

    def __init__(self, split: FolderSplit):
        self.split = split

    def __len__(self) -> int:
        return len(self.split.files)

    def __getitem__(self, i: int) -> tuple[torch.Tensor, int]:
        from torchvision.io import read_file

        return read_file(self.split.files[i]), self.split.labels[i]


def collate_encoded(
    samples: list[tuple[torch.Tensor, int]],
) -> tuple[tuple[torch.Tensor, torch.Tensor], torch.Tensor]:
    """A micro batch's files as one flat byte tensor and their lengths, and the labels.

    One tensor per batch rather than one per file: a loader worker hands every tensor to the
    training process through a file descriptor of its own, and a tensor per file (batch x prefetch x
    workers of them) runs the process out of descriptors (``OSError: Bad file descriptor``).
    """
    lengths = torch.tensor([s[0].numel() for s in samples], dtype=torch.int64)
    flat = torch.cat([s[0] for s in samples])
    return (flat, lengths), torch.tensor([s[1] for s in samples], dtype=torch.int64)


def decode_on_device(
    encoded: tuple[torch.Tensor, torch.Tensor],
    device: torch.device,
    size: int,
    in_chans: int,
    recipe: CropRecipe | None,
    generator: torch.Generator,
) -> torch.Tensor:
    """One nvJPEG call and one batched crop (``crop_images``) for the micro batch: uint8 (B, C, size, size)."""
    from torchvision.io import ImageReadMode, decode_jpeg

    mode = ImageReadMode.GRAY if in_chans == 1 else ImageReadMode.RGB
    flat, lengths = encoded
    images = decode_jpeg(list(torch.split(flat, lengths.tolist())), mode=mode, device=device)
    return crop_images(back_to_back(images), size, recipe, generator)


def all_jpeg(split: FolderSplit) -> bool:
    return all(f.lower().endswith(JPEG_SUFFIXES) for f in split.files)
