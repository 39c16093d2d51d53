"""One rank's pixel-copy pipeline stage by stage, alternated in one process: micro batches per second.

Usage (from the repository root, the folder's pixel copy built first by ``trainers.input_pipeline --pixels``):
    PYTHONPATH=. python docs/results/h200-pixel-reader/stages.py FOLDER [--workers 14] [--batch 256] [--seconds 6]

Stages, each timed after its first batch over the same shuffled order, from the page cache:
- ``worker processes``: the reader before ``read_batches``: DataLoader workers each read a micro batch
  into one tensor and ship it to this process, which pins it (``pin_memory=True``);
- ``threads N``: ``read_batches`` with N threads, straight into pinned memory;
- ``2 threads + copy to GPU``: that, and each batch's bytes copied to the device;
- ``crop on GPU`` (on the CPU where there is none): ``crop_images`` and ``to_model_input`` alone, over
  one batch resident on the device.
"""

import argparse
import functools
import json
import statistics
import time

import torch
from torch.utils.data import DataLoader

from trainers.data.batches import to_model_input
from trainers.data.crops import CropRecipe, crop_images
from trainers.data.imagefolder import index_imagefolder
from trainers.data.pixel_copy import pixel_copy, read_batches


def gathered(split, indices):
    """A micro batch of the pixel copy as one tensor, read in the loader worker that calls it."""
    return next(read_batches(split, indices, len(indices), threads=1, pin=False))


def rate(batches, device: torch.device, seconds: float) -> float:
    images, started = 0, None
    for _, labels in batches:
        if device.type == "cuda":
            torch.cuda.synchronize(device)
        if started is None:
            started = time.perf_counter()
            continue
        images += len(labels)
        if time.perf_counter() - started >= seconds:
            return images / (time.perf_counter() - started)
    raise SystemExit("the order ran out before the window: pass a larger folder or fewer --seconds")


def main() -> None:
    p = argparse.ArgumentParser()
    p.add_argument("folder")
    p.add_argument("--workers", type=int, default=14)
    p.add_argument("--batch", type=int, default=256)
    p.add_argument("--seconds", type=float, default=6.0)
    p.add_argument("--repeats", type=int, default=3)
    args = p.parse_args()
    device = torch.device("cuda" if torch.cuda.is_available() else "cpu")
    cuda = device.type == "cuda"
    split = pixel_copy(args.folder, index_imagefolder(args.folder), 224, 3, args.workers).train
    # a million images, epochs enough for any stage's window: one that ran out would end mid-count
    order = torch.randperm(len(split), generator=torch.Generator().manual_seed(0)).tolist()
    order *= -(-1_000_000 // len(order))

    def workers():
        return DataLoader(
            range(len(split)),
            batch_size=args.batch,
            sampler=order,
            num_workers=args.workers,
            collate_fn=functools.partial(gathered, split),
            pin_memory=cuda,
            prefetch_factor=4,
        )

    def threads(count):
        return lambda: read_batches(split, order, args.batch, count, pin=cuda)

    def copied():
        for (flat, shapes), labels in threads(2)():
            yield (flat.to(device, non_blocking=True), shapes), labels

    resident = next(copied())
    generator = torch.Generator().manual_seed(0)

    def cropped():
        while True:
            pixels = crop_images(resident[0], 224, CropRecipe(), generator)
            yield to_model_input(pixels, 224, torch.bfloat16, flip=False), resident[1]

    stages = {"worker processes": workers, **{f"threads {n}": threads(n) for n in (1, 2, 4)}}
    stages |= {"2 threads + copy to GPU": copied, "crop on GPU": cropped}
    seen = {name: [] for name in stages}
    for _ in range(args.repeats):
        for name, batches in stages.items():
            seen[name].append(rate(batches(), device, args.seconds))
    print(f"{'stage':24} {'median img/s':>12}  range   ({args.workers} workers/threads, batch {args.batch}, {device})")
    for name, rates in seen.items():
        print(f"{name:24} {statistics.median(rates):12.0f}  {min(rates):.0f}-{max(rates):.0f}")
    print(json.dumps(seen))


if __name__ == "__main__":
    main()
