"""The image folder's JPEG decoder against torchvision's deprecated one: files decoded per second, one process.

``python -m raysweep.bench.jpeg_decode --images 2000 --size 64 --repeats 7`` writes that many small JPEGs (Pillow,
quality 90) to a temporary folder, then decodes them all with each decoder in turn, ``--repeats`` rounds in
alternating order, and prints each decoder's median rate with its spread (min..max), and the largest pixel
difference between the two decoders' tensors.  The new decoder is the rank's own (``trainers.data.imagefolder.
decode_file``, TorchCodec); the old is ``torchvision.io.decode_image``, which torchvision 0.29 deprecates.
"""

from __future__ import annotations

import json
import statistics
import tempfile
import time
import warnings
from collections.abc import Callable
from pathlib import Path

import torch

from raysweep.core.command import ArgumentParser, exit_process, run_command
from trainers.data.imagefolder import decode_file


def write_jpegs(folder: Path, count: int, size: int, seed: int = 0) -> list[str]:
    """``count`` smooth RGB images of ``size`` px (a gradient plus noise, as photographs compress) as JPEG files."""
    import numpy as np
    from PIL import Image

    rng = np.random.default_rng(seed)
    ramp = np.linspace(0, 200, size, dtype=np.float32)
    paths = []
    for i in range(count):
        base = ramp[None, :, None] + ramp[:, None, None] * rng.uniform(0, 0.3, 3) + rng.normal(0, 12, (size, size, 3))
        path = folder / f"{i:05d}.jpg"
        Image.fromarray(base.clip(0, 255).astype(np.uint8)).save(path, quality=90)
        paths.append(str(path))
    return paths


def torchvision_decode(path: str) -> torch.Tensor:
    from torchvision.io import ImageReadMode, decode_image

    return decode_image(path, mode=ImageReadMode.RGB)


DECODERS: dict[str, Callable[[str], torch.Tensor]] = {
    "torchvision.io (deprecated)": torchvision_decode,
    "decode_file (TorchCodec)": lambda path: decode_file(path, 3),
}


def measure_jpeg_decode(images: int, size: int, repeats: int) -> dict:
    """Each decoder's files per second over ``repeats`` rounds (median, min, max) and the largest pixel difference."""
    torch.set_num_threads(1)  # as in a DataLoader worker process, which decodes one file at a time
    with tempfile.TemporaryDirectory(prefix="raysweep-jpeg-") as tmp, warnings.catch_warnings():
        # the comparison itself calls the deprecated decoder
        warnings.filterwarnings("ignore", category=DeprecationWarning, module="torchvision")
        paths = write_jpegs(Path(tmp), images, size)
        names = list(DECODERS)
        outputs = {name: [DECODERS[name](p) for p in paths] for name in names}  # warm: libraries loaded, files cached
        rates: dict[str, list[float]] = {name: [] for name in names}
        for round_ in range(repeats):
            for name in names if round_ % 2 == 0 else reversed(names):
                start = time.perf_counter()
                for p in paths:
                    DECODERS[name](p)
                rates[name].append(len(paths) / (time.perf_counter() - start))
    old, new = (outputs[name] for name in names)
    max_diff = max(int((a.int() - b.int()).abs().max()) for a, b in zip(old, new, strict=True))
    summary = {
        name: {"median_files_s": statistics.median(r), "min_files_s": min(r), "max_files_s": max(r)}
        for name, r in rates.items()
    }
    ratio = summary[names[1]]["median_files_s"] / summary[names[0]]["median_files_s"]
    return {
        "images": images,
        "size": size,
        "repeats": repeats,
        "decoders": summary,
        "new_over_old": ratio,
        "max_pixel_diff": max_diff,
    }


def main(argv: list[str] | None = None) -> int:
    return run_command(jpeg_decode_command, argv)


def jpeg_decode_command(argv: list[str] | None) -> int:
    parser = ArgumentParser(prog="python -m raysweep.bench.jpeg_decode", description=__doc__.splitlines()[0])
    parser.add_argument("--images", type=int, default=2000, help="JPEG files to decode per round (default 2000)")
    parser.add_argument("--size", type=int, default=64, help="their side in pixels (default 64)")
    parser.add_argument("--repeats", type=int, default=7, help="rounds per decoder (default 7)")
    args = parser.parse_args(argv)
    result = measure_jpeg_decode(args.images, args.size, args.repeats)
    for name, r in result["decoders"].items():
        print(f"{name:28} {r['median_files_s']:9.0f} files/s (min {r['min_files_s']:.0f}, max {r['max_files_s']:.0f})")
    print(f"new/old median: {result['new_over_old']:.2f}; largest pixel difference: {result['max_pixel_diff']}")
    print(json.dumps(result))
    return 0


if __name__ == "__main__":
    exit_process(main())
