"""Write a folder of scientific arrays that the ``arrays`` dataset reads: for tests, benchmarks and trying it out.

    python -m trainers.make_arrays DIR --channels 8 --dtype uint16 --size 2048 --classes 4 --per-class 8

``DIR/train/<class>/`` and ``DIR/val/<class>/`` of arrays of mixed sizes (height and width each drawn from
``--min-size`` to ``--size``, or both fixed by ``--height`` and ``--width``): noise around the middle of the dtype's
range, and a brighter channel that tells the class (channel ``label % channels``), so a model can learn it.
``--preset`` starts from the shape of a real scientific set (``PRESETS``); the flags given beside it override it:

    python -m trainers.make_arrays standins/fastmri --preset fastmri --per-class 32
"""

from __future__ import annotations

from dataclasses import dataclass, replace
from pathlib import Path

import numpy as np

from raysweep.core.command import ArgumentParser, exit_process, run_command
from raysweep.core.errors import UsageError
from trainers.data.arrays import DTYPES, MAX_CHANNELS, tiff_module

FORMATS = ("npy", "npz", "tif")
LAYOUTS = ("chw", "hwc")
# the values' scale per dtype: noise around half of it, the class channel a quarter higher
FULL_SCALE = {"uint8": 255.0, "uint16": 65535.0, "float16": 1.0, "float32": 1.0}


@dataclass(frozen=True)
class ArrayFolderSpec:
    channels: int = 8
    dtype: str = "uint16"
    size: int = 2048
    min_size: int = 0  # 0 = three quarters of ``size``
    classes: int = 4
    per_class: int = 8
    val_per_class: int = 2
    format: str = "npy"
    layout: str = "chw"
    seed: int = 0
    height: int = 0  # with ``width``, every array this size; 0 = a random size from ``min_size`` to ``size``
    width: int = 0


# Stand-ins of real scientific sets, by shape and type (their values are the class-telling noise above):
# fastMRI's multi-coil knee slices, 15 coils of complex values as 30 real channels, 640 x 368;
# a climate reanalysis state of 91 variables (levels x fields) on a 128 x 256 global grid (1.40625 degrees).
PRESETS = {
    "fastmri": ArrayFolderSpec(channels=30, dtype="float32", size=640, height=640, width=368),
    "climate": ArrayFolderSpec(channels=91, dtype="float32", size=256, height=128, width=256),
}


def make_array(spec: ArrayFolderSpec, label: int, rng: np.random.Generator) -> np.ndarray:
    """One (C, H, W) array of ``spec``'s dtype and a random size whose channel ``label % C`` is brighter."""
    if spec.height and spec.width:
        h, w = spec.height, spec.width
    else:
        low = spec.min_size or max(1, spec.size * 3 // 4)
        h, w = (int(v) for v in rng.integers(low, spec.size + 1, size=2))
    scale = FULL_SCALE[spec.dtype]
    values = rng.random((spec.channels, h, w), dtype=np.float32) * (0.2 * scale) + 0.4 * scale
    values[label % spec.channels] += 0.25 * scale
    return values.astype(spec.dtype)


def write_array(path: Path, values: np.ndarray, spec: ArrayFolderSpec) -> Path:
    values = values.transpose(1, 2, 0) if spec.layout == "hwc" else values
    path = path.with_suffix(f".{spec.format}")
    if spec.format == "npy":
        np.save(path, values)
    elif spec.format == "npz":
        np.savez_compressed(path, values)
    else:
        tiff_module(str(path)).imwrite(path, values)
    return path


def make_arrays(root: Path, spec: ArrayFolderSpec = ArrayFolderSpec()) -> Path:
    """``root/{train,val}/class<k>/`` of ``spec``'s arrays; ``root`` returned."""
    if not 1 <= spec.channels <= MAX_CHANNELS:
        raise ValueError(f"channels must be 1 to {MAX_CHANNELS}, got {spec.channels}")
    rng = np.random.default_rng(spec.seed)
    for split, count in (("train", spec.per_class), ("val", spec.val_per_class)):
        for label in range(spec.classes):
            folder = root / split / f"class{label}"
            folder.mkdir(parents=True, exist_ok=True)
            for i in range(count):
                write_array(folder / f"{i:05d}", make_array(spec, label, rng), spec)
    return root


def main(argv: list[str] | None = None) -> int:
    return run_command(make_arrays_command, argv)


def make_arrays_command(argv: list[str] | None) -> int:
    parser = ArgumentParser(prog="python -m trainers.make_arrays", description=__doc__.splitlines()[0])
    parser.add_argument("root", type=Path, help="folder to write (train/ and val/ inside)")
    defaults = ArrayFolderSpec()
    parser.add_argument("--preset", choices=sorted(PRESETS), help="start from a real set's shape (PRESETS)")
    # None = not given: the preset's value, else the default shown
    parser.add_argument("--channels", type=int, help=f"1 to {MAX_CHANNELS} (default {defaults.channels})")
    parser.add_argument("--dtype", choices=DTYPES, help=f"default {defaults.dtype}")
    parser.add_argument("--size", type=int, help=f"largest height and width (default {defaults.size})")
    parser.add_argument("--min-size", type=int, help="smallest; 0 = 3/4 of --size (the default)")
    parser.add_argument("--height", type=int, help="with --width, every array this size (default: random sizes)")
    parser.add_argument("--width", type=int)
    parser.add_argument("--classes", type=int, help=f"default {defaults.classes}")
    parser.add_argument("--per-class", type=int, help=f"training arrays per class (default {defaults.per_class})")
    parser.add_argument("--val-per-class", type=int, help=f"default {defaults.val_per_class}")
    parser.add_argument("--format", choices=FORMATS, help=f"default {defaults.format}")
    parser.add_argument("--layout", choices=LAYOUTS, help=f"default {defaults.layout}")
    parser.add_argument("--seed", type=int, help=f"default {defaults.seed}")
    args = vars(parser.parse_args(argv))
    root, preset = args.pop("root"), args.pop("preset")
    spec = replace(PRESETS.get(preset, defaults), **{k: v for k, v in args.items() if v is not None})
    if not 1 <= spec.channels <= MAX_CHANNELS or min(spec.size, spec.classes, spec.per_class) < 1:
        raise UsageError(f"--channels must be 1 to {MAX_CHANNELS}; --size, --classes and --per-class positive")
    if (spec.height > 0) != (spec.width > 0) or min(spec.height, spec.width) < 0:
        raise UsageError(f"--height and --width go together, both positive; got {spec.height} and {spec.width}")
    make_arrays(root, spec)
    total = spec.classes * (spec.per_class + spec.val_per_class)
    shape = f"{spec.height} x {spec.width}" if spec.height else f"up to {spec.size} px"
    print(f"wrote {total} arrays of {spec.channels} x {spec.dtype} ({shape}) under {root}")
    return 0


if __name__ == "__main__":
    exit_process(main())
