"""ImageNet-style ``train/<class>/*`` and ``val/<class>/*`` folders, streamed at the model's resolution.

Only the file list lives in memory; each rank's DataLoader workers read, decode and crop its shard of
an epoch (timm/torchvision recipes), so memory per rank is bounded by the prefetch depth whatever the
folder's size.  The GPU path reads JPEG bytes in the workers and decodes a whole micro batch with
nvJPEG on the device (``torchcodec.decoders.decode_jpeg(list, device="cuda")``), then crops it in one call
(``trainers.data.crops.crop_batch``).  Images are decoded by TorchCodec, the maintained successor of
torchvision's decoders (deprecated since torchvision 0.29), and by PIL for the formats it does not read.
"""

from __future__ import annotations

import sys
from concurrent.futures import ThreadPoolExecutor
from dataclasses import dataclass, field
from pathlib import Path
from typing import Protocol

import torch
from torch.utils.data import Dataset, default_collate

from raysweep.core.errors import DataFileError, UsageError
from trainers.data.crops import CropRecipe, back_to_back, crop_images, train_crop, val_crop

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


def unreadable_images(data_dir: str) -> list[DataFileError]:
    """The image folder's files whose headers are not sound (``header_faults``), both splits."""
    index = index_imagefolder(data_dir)
    return header_faults([*index.train.files, *index.val.files], "imagefolder")


def read_mode(in_chans: int) -> str:
    """TorchCodec's decoding mode for an image of ``in_chans`` channels."""
    return "GRAY" if in_chans == 1 else "RGB"


def file_bytes(path: str) -> torch.Tensor:
    """The file's bytes as a uint8 1-D tensor (of writable memory, as a tensor's must be)."""
    return torch.frombuffer(bytearray(Path(path).read_bytes()), dtype=torch.uint8)


def decode_file(path: str, in_chans: int) -> torch.Tensor:
    """uint8 (in_chans, H, W) from any format TorchCodec or PIL decodes; grey, CMYK and palettes converted.

    A file neither can decode raises a ``DataFileError`` naming it: a corrupt input stops the sweep (or,
    with ``skip_bad_files``, is counted and read around: ``DecodedImages``) rather than silently shrinking
    the split.
    """
    from torchcodec.decoders import decode_image

    try:  # from the file's bytes: TorchCodec given the path is slower by half on small files
        return decode_image(file_bytes(path), mode=read_mode(in_chans))
    except (OSError, RuntimeError, ValueError):
        pass  # formats TorchCodec does not read (TIFF, BMP, PPM) or rejects (odd files), unreadable files: PIL next
    try:
        import numpy as np
        from PIL import Image, UnidentifiedImageError

        with Image.open(path) as img:
            pixels = np.asarray(img.convert("L" if in_chans == 1 else "RGB"))
    except UnidentifiedImageError as e:
        raise DataFileError(path, "imagefolder", "cannot be decoded (not an image TorchCodec or PIL reads)") from e
    except Exception as e:  # PIL raises many types for damaged files; each means the same here
        raise DataFileError(path, "imagefolder", f"cannot be decoded ({e})") from e
    pixels = pixels[None] if pixels.ndim == 2 else pixels.transpose(2, 0, 1)
    return torch.from_numpy(pixels.copy())


# Files between two progress lines of the header check; a folder of fewer is checked without them.
PROGRESS_EVERY = 20_000
# Threads reading headers: the reads wait on the disk (or a network filesystem), not on the CPU.
HEADER_THREADS = 16


def header_fault(path: str) -> str | None:
    """What is wrong with the image file's header (None where it is sound): PIL's parse of its header alone.

    Cheap (a few KB read, nothing decoded): a file cut short after its header passes, and fails when a
    rank decodes it.  A file PIL does not recognise is decoded once (TorchCodec reads some formats PIL
    does not); only a file neither reads is a fault.
    """
    from PIL import Image, UnidentifiedImageError

    try:
        with Image.open(path) as img:
            img.size  # noqa: B018 - parsing the header is the check
    except UnidentifiedImageError:
        try:
            decode_file(path, 3)
        except DataFileError as e:
            return e.reason
    except OSError as e:
        if e.errno is not None:  # the filesystem's refusal (PIL's own OSErrors carry no errno)
            return f"cannot be read ({e.strerror})"
        return f"has a damaged header ({e})"
    except Exception as e:  # a damaged header: PIL raises other types too
        return f"has a damaged header ({e})"
    return None


def header_faults(files: list[str], dataset: str, threads: int = HEADER_THREADS) -> list[DataFileError]:
    """Every file of ``files`` whose header is not sound (``header_fault``), in order; read in ``threads`` threads,
    with a progress line on stderr every ``PROGRESS_EVERY`` files of a large folder."""
    faults = []
    with ThreadPoolExecutor(threads) as pool:
        for done, (file, fault) in enumerate(zip(files, pool.map(header_fault, files), strict=True), start=1):
            if fault is not None:
                faults.append(DataFileError(file, dataset, fault))
            if done % PROGRESS_EVERY == 0:
                print(f"raysweep: {dataset}: checked the headers of {done}/{len(files)} files", file=sys.stderr)
    return faults


class DecodedImages(Dataset):
    """CPU path: ``(uint8 (C, size, size), label, unreadable)``; a training sample's crop is drawn from (seed, epoch,
    index).

    A file that cannot be read (``DataFileError``) is read around: the sample is the split's next readable file,
    and the errors ride along with it (``unreadable``) to the rank's process, which stops the trial at the first
    or, with ``skip_bad_files``, counts them (``UnreadableFiles``).  A loader process cannot raise it there
    itself: the DataLoader re-raises a worker's exception as a new one built from its message alone.
    """

    def __init__(self, split: Split, size: int, in_chans: int, recipe: CropRecipe | None, seed: int):
        self.split, self.size, self.in_chans, self.recipe, self.seed = split, size, in_chans, recipe, seed
        self.epoch = 0

    def __len__(self) -> int:
        return len(self.split)

    def __getitem__(self, i: int) -> tuple[torch.Tensor, int, list[DataFileError]]:
        unreadable = []
        for j in (i + k for k in range(len(self.split))):
            try:
                image, read = self.split.read(j % len(self.split), self.in_chans), j % len(self.split)
                break
            except DataFileError as e:
                unreadable.append(e)
        else:
            raise unreadable[0]  # no file of the split reads: nothing to read around with
        label = self.split.labels[read]
        if self.recipe is None:
            return val_crop(image, self.size), label, unreadable
        # a generator per sample: the crop does not depend on which worker process decodes it
        generator = torch.Generator().manual_seed(hash((self.seed, self.epoch, i)) & (2**63 - 1))
        return train_crop(image, self.size, self.recipe, generator), label, unreadable


def collate_decoded(
    samples: list[tuple[torch.Tensor, int, list[DataFileError]]],
) -> tuple[torch.Tensor, torch.Tensor, list[DataFileError]]:
    """A micro batch of ``DecodedImages``: its pixels and labels as the default collate makes them, and the
    errors of the files read around."""
    pixels, labels = default_collate([(image, label) for image, label, _ in samples])
    return pixels, labels, [e for _, _, unreadable in samples for e in unreadable]


@dataclass
class UnreadableFiles:
    """The files a rank could not read, in the order met: with ``skip`` counted, else the first stops the trial."""

    skip: bool
    found: dict[str, DataFileError] = field(default_factory=dict)  # by path

    def met(self, errors: list[DataFileError]) -> None:
        for error in errors:
            if not self.skip:
                raise error
            self.found.setdefault(error.path, error)


class EncodedImages(Dataset):
    """GPU path: the file's bytes (uint8 1-D) and its label; decoded in batches on the device."""

    def __init__(self, split: FolderSplit):
        self.split = split

    def __len__(self) -> int:
        return len(self.split.files)

    def __getitem__(self, i: int) -> tuple[torch.Tensor, int]:
        return file_bytes(self.split.files[i]), self.split.labels[i]


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
    from torchcodec.decoders import decode_jpeg

    flat, lengths = encoded
    images = decode_jpeg(list(torch.split(flat, lengths.tolist())), mode=read_mode(in_chans), device=device)
    return crop_images(back_to_back(images), size, recipe, generator)


def all_jpeg(split: FolderSplit) -> bool:
    return all(f.lower().endswith(JPEG_SUFFIXES) for f in split.files)
