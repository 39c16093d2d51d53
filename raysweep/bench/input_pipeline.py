"""The image-folder input pipeline alone: decoded, cropped, normalised micro batches per second on one rank.

``python -m raysweep.bench`` calls ``measure_input_pipeline``; it is also a script of its own:
``python -m raysweep.bench.input_pipeline DIR --size 224 --batch 256 --decode gpu --workers 8 --seconds 20``
(``--pixels``: read the folder's pixel copy, built first if needed).
"""

from __future__ import annotations

import dataclasses
import json
import time

import torch

from raysweep.core.command import ArgumentParser, exit_process, run_command
from trainers.data.batches import Batches, FolderLoading
from trainers.data.datasets import load_dataset
from trainers.data.pixel_copy import pixel_copy


def measure_input_pipeline(
    folder: str, image_size: int, batch: int, decode: str, workers: int, seconds: float, pixels: bool = False
) -> dict[str, float | int | str]:
    """Training micro batches of ``folder`` on this host's first GPU (else the CPU) for about ``seconds``.

    ``pixels``: read its pixel copy (``trainers.data.pixel_copy``; built first, with ``workers`` processes,
    where missing), which no decoder touches. The first batch is left out of the rate: it pays for
    starting the loader processes, which a trial pays once per epoch.  On CUDA the clock stops only
    after the device has finished the last batch.
    """
    device = torch.device("cuda" if torch.cuda.is_available() else "cpu")
    data = load_dataset("imagefolder", folder)
    if pixels:
        data = dataclasses.replace(data, folder=pixel_copy(folder, data.folder, image_size, 3, workers))
    batches = Batches(data, device, image_size, torch.float32, 0, 1, 0, FolderLoading(decode=decode, workers=workers))
    on_device = batches.on_device(data.folder.train)
    per_epoch = max(1, data.num_train // batch)
    images, started, epoch, first_batch_s = 0, time.perf_counter(), 0, 0.0
    while True:
        for x, _ in batches.train(epoch, batch, per_epoch):
            if device.type == "cuda":
                torch.cuda.synchronize(device)
            if not first_batch_s:
                first_batch_s = time.perf_counter() - started
                started = time.perf_counter()
                continue
            images += x.shape[0]
            if time.perf_counter() - started >= seconds:
                elapsed = time.perf_counter() - started
                return {
                    "images_per_s": images / elapsed,
                    "images": images,
                    "seconds": elapsed,
                    "first_batch_s": first_batch_s,
                    "decode": "none" if pixels else "gpu" if on_device else "cpu",
                    "crop": "gpu" if on_device else "cpu",
                    "workers": workers,
                    "device": str(device),
                    "image_size": image_size,
                    "batch": batch,
                }
        epoch += 1


def main(argv: list[str] | None = None) -> int:
    return run_command(input_pipeline_command, argv)


def input_pipeline_command(argv: list[str] | None) -> int:
    parser = ArgumentParser(prog="python -m raysweep.bench.input_pipeline", description=__doc__.splitlines()[0])
    parser.add_argument("folder")
    parser.add_argument("--size", type=int, default=224)
    parser.add_argument("--batch", type=int, default=256)
    parser.add_argument("--decode", default="auto", choices=("auto", "cpu", "gpu"))
    parser.add_argument("--workers", type=int, default=4, help="loader processes (and the pixel copy's builders)")
    parser.add_argument("--seconds", type=float, default=10.0)
    parser.add_argument("--pixels", action="store_true", help="read the folder's pixel copy (built first if needed)")
    args = parser.parse_args(argv)
    measured = measure_input_pipeline(
        args.folder, args.size, args.batch, args.decode, args.workers, args.seconds, args.pixels
    )
    print(json.dumps(measured))
    return 0


if __name__ == "__main__":
    exit_process(main())
