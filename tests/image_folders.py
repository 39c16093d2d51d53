"""Generated image folders for the data tests: flat images whose red channel tells their class."""

from __future__ import annotations

from pathlib import Path

import numpy as np
from PIL import Image

SIZES = ((40, 30), (24, 48), (33, 33), (64, 20))  # (width, height): several shapes and aspects


def write_image(path: Path, width: int, height: int, value: int, mode: str = "RGB") -> None:
    """A flat image whose red channel is ``value`` (so a sample's class is visible in its pixels)."""
    rgb = np.zeros((height, width, 3), dtype=np.uint8)
    rgb[..., 0], rgb[..., 1], rgb[..., 2] = value, 255 - value, 128
    # a grey file is grey in every channel, so its red channel still shows the class
    image = Image.fromarray(rgb[..., 0] if mode == "L" else rgb)
    if mode == "CMYK":
        image = image.convert(mode)
    image.save(path, quality=95)


def class_value(label: int) -> int:
    """The red value of a class's images: distinct for up to four classes."""
    return 40 + 60 * label


def make_image_folder(root: Path, classes: tuple[str, ...], train_per_class: int, val_per_class: int) -> Path:
    """``root/{train,val}/<class>/`` of JPEGs and PNGs of four sizes, plus one grayscale and one CMYK JPEG."""
    for split, count in (("train", train_per_class), ("val", val_per_class)):
        for label, cls in enumerate(classes):
            (root / split / cls).mkdir(parents=True)
            for i in range(count):
                w, h = SIZES[i % len(SIZES)]
                suffix = ".png" if i % 3 == 2 else ".jpg"
                write_image(root / split / cls / f"{i}{suffix}", w, h, class_value(label))
    write_image(root / "train" / classes[0] / "grey.jpg", 30, 30, class_value(0), mode="L")
    write_image(root / "train" / classes[1] / "cmyk.jpg", 30, 30, class_value(1), mode="CMYK")
    return root


def folder_with_a_large_image(root: Path, train_per_class: int, val_per_class: int) -> Path:
    """Two classes of ``make_image_folder``'s small images plus ``train/a/big.jpg``, 600x300: larger than
    the prepared and pixel copies' 256-px short side."""
    make_image_folder(root, ("a", "b"), train_per_class, val_per_class)
    write_image(root / "train" / "a" / "big.jpg", 600, 300, 40)
    return root


def make_array_folder(root: Path, channels: int = 8, dtype: str = "uint16", **spec) -> Path:
    """``trainers.make_arrays``'s folder, CPU-sized: 2 classes x 4 training and 2 held-out arrays of 24 to 40 px."""
    from trainers.make_arrays import ArrayFolderSpec, make_arrays

    sizes = dict(size=40, min_size=24, classes=2, per_class=4, val_per_class=2)
    return make_arrays(root, ArrayFolderSpec(channels=channels, dtype=dtype, **(sizes | spec)))
