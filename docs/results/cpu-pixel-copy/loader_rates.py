"""Host side of each image-folder path, one loader worker, side by side: micro batches per second out of a DataLoader.

Usage (from the repository root):
    PYTHONPATH=. python docs/results/cpu-pixel-copy/loader_rates.py FOLDER [--batch 64] [--seconds 5] [--repeats 3]

Each round times, in turn: JPEG bytes of the prepared copy (what a GPU-decode rank's workers ship),
decoded and cropped images of the prepared copy (the CPU path), and the pixel copy's batches (what a
prepare=pixels rank's workers ship: no decode).  The copies are built first (not timed).
"""

import argparse
import functools
import statistics
import time

import torch
from torch.utils.data import DataLoader

from trainers.data.crops import CropRecipe
from trainers.data.imagefolder import DecodedImages, EncodedImages, collate_encoded, index_imagefolder
from trainers.data.pixel_copy import pixel_copy, read_batches
from trainers.data.prepared import prepared_index


def gathered(split, indices):
    """A micro batch of the pixel copy as one tensor, read in the loader worker that calls it."""
    return next(read_batches(split, indices, len(indices), threads=1, pin=False))


def rate(dataset, collate, batch: int, seconds: float) -> float:
    order = torch.randperm(len(dataset), generator=torch.Generator().manual_seed(0)).tolist()
    images, started, first = 0, 0.0, True
    while True:
        loader = DataLoader(
            dataset, batch_size=batch, sampler=order, num_workers=1, collate_fn=collate, prefetch_factor=4
        )
        for _, labels in loader:
            if first:  # the worker's start is not the path's rate
                first, started = False, time.perf_counter()
                continue
            images += len(labels)
            if time.perf_counter() - started >= seconds:
                return images / (time.perf_counter() - started)


def main() -> None:
    p = argparse.ArgumentParser()
    p.add_argument("folder")
    p.add_argument("--batch", type=int, default=64)
    p.add_argument("--seconds", type=float, default=5.0)
    p.add_argument("--repeats", type=int, default=3)
    args = p.parse_args()
    source = index_imagefolder(args.folder)
    jpeg = prepared_index(args.folder, source, workers=2)
    pixels = pixel_copy(args.folder, source, 224, 3, workers=2)
    paths = {
        "jpeg bytes (gpu decode)": (EncodedImages(jpeg.train), collate_encoded),
        "decode + crop to 224 (cpu)": (DecodedImages(jpeg.train, 224, 3, CropRecipe(), 0), None),
        "pixel copy (prepare=pixels)": (range(len(pixels.train)), functools.partial(gathered, pixels.train)),
    }
    seen = {name: [] for name in paths}
    for _ in range(args.repeats):
        for name, (dataset, collate) in paths.items():
            seen[name].append(rate(dataset, collate, args.batch, args.seconds))
    print(f"{'path':30} {'median img/s':>12}  range")
    for name, rates in seen.items():
        print(f"{name:30} {statistics.median(rates):12.0f}  {min(rates):.0f}-{max(rates):.0f}")


if __name__ == "__main__":
    main()
