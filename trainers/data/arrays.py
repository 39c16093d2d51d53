"""Scientific arrays by class folder: ``train/<class>/`` and ``val/<class>/`` of ``.npy``, ``.npz`` or TIFF files.

Any channel count from 1 to ``MAX_CHANNELS`` and the bit depths of ``DTYPES``, every file its own height and
width (one channel count and one dtype per folder).  A 3-D array's channel axis is the smaller of its first
and last (the first when they are equal): ``(C, H, W)`` and ``(H, W, C)`` both read, a 2-D array is one channel.

Every file's header is read when the folder is indexed (before any trial, by the planner too), so an
unreadable or mis-shaped file stops the sweep with one line naming it.  Arrays reach the device in their
stored dtype (a 16-bit image crosses the bus as 2 bytes a value) and are cropped, flipped and normalised
there, as images are (``trainers.data.batches``).  The per-channel mean and standard deviation are measured once
per node over the training split and stored with the folder's prepared data (``array_stats``), under the
same key, lock and location as the image copies (``trainers.data.node_cache``): a changed folder is measured again.
"""

from __future__ import annotations

import json
import zipfile
from dataclasses import dataclass
from pathlib import Path

import numpy as np
import torch

from raysweep.core.errors import DataFileError, UsageError
from trainers.data.channel_stats import ChannelStats
from trainers.data.imagefolder import FolderIndex, index_imagefolder
from trainers.data.node_cache import build_once, cache_root, map_in_processes, source_key

ARRAY_SUFFIXES = (".npy", ".npz", ".tif", ".tiff")
DTYPES = ("uint8", "uint16", "float16", "float32")
# channels up to a climate state's 91 variables and beyond; the channel axis is told from the spatial ones by size
MAX_CHANNELS = 128
STATS_FILE = "channel_stats.json"
TORCH_DTYPES = {"uint8": torch.uint8, "uint16": torch.uint16, "float16": torch.float16, "float32": torch.float32}


@dataclass(frozen=True)
class ArrayHeader:
    """What a file holds, read without its values: (C, H, W), the dtype, and whether channels come last."""

    channels: int
    height: int
    width: int
    dtype: str
    channels_last: bool


def bad_file(path: str, why: str) -> UsageError:
    return UsageError(f"arrays: {path}: {why}")


def layout(path: str, shape: tuple[int, ...], dtype: np.dtype) -> ArrayHeader:
    """The header of an array of ``shape`` and ``dtype``, or a UsageError naming the file and what is wrong."""
    if dtype.name not in DTYPES:
        raise bad_file(path, f"dtype {dtype.name} is not one of {', '.join(DTYPES)}")
    if len(shape) == 2:
        return ArrayHeader(1, shape[0], shape[1], dtype.name, False)
    if len(shape) != 3:
        raise bad_file(path, f"shape {tuple(shape)} is not (C, H, W), (H, W, C) or (H, W)")
    channels_last = shape[2] < shape[0]
    c, h, w = (shape[2], shape[0], shape[1]) if channels_last else shape
    if not 1 <= c <= MAX_CHANNELS or min(h, w) < 1:
        raise bad_file(path, f"shape {tuple(shape)} has {c} channels on its smaller end axis (1 to {MAX_CHANNELS})")
    return ArrayHeader(int(c), int(h), int(w), dtype.name, channels_last)


def npz_member(archive: zipfile.ZipFile, path: str) -> str:
    names = [n for n in archive.namelist() if n.endswith(".npy")]
    if len(names) != 1:
        raise bad_file(path, f"an .npz must hold exactly one array, found {len(names)}")
    return names[0]


def read_header(path: str) -> ArrayHeader:
    """The file's header alone: ``.npy`` memory-mapped, ``.npz`` its member's header, TIFF its first series."""
    suffix = Path(path).suffix.lower()
    try:
        if suffix == ".npy":
            values = np.load(path, mmap_mode="r", allow_pickle=False)
            return layout(path, values.shape, values.dtype)
        if suffix == ".npz":
            with zipfile.ZipFile(path) as archive, archive.open(npz_member(archive, path)) as member:
                version = np.lib.format.read_magic(member)
                read = np.lib.format.read_array_header_1_0 if version == (1, 0) else np.lib.format.read_array_header_2_0
                shape, _, dtype = read(member)
            return layout(path, shape, dtype)
        with tiff_module(path).TiffFile(path) as tiff:  # the header alone, and the file closed after it
            series = tiff.series[0]
            return layout(path, tuple(series.shape), np.dtype(series.dtype))
    except UsageError:
        raise
    except Exception as e:  # numpy, zipfile and tifffile raise many types for damaged files; each means the same
        raise bad_file(path, f"cannot read it ({type(e).__name__}: {e})") from e


def tiff_module(path: str):
    try:
        import tifffile
    except ImportError:
        raise bad_file(path, "reading TIFF arrays needs tifffile (pip install tifffile)") from None
    return tifffile


def read_array(path: str) -> np.ndarray:
    """The file's values as a C-contiguous (C, H, W) array of its stored dtype."""
    header = read_header(path)
    suffix = Path(path).suffix.lower()
    try:
        if suffix == ".npy":
            values = np.load(path, allow_pickle=False)
        elif suffix == ".npz":
            with np.load(path, allow_pickle=False) as archive:
                values = archive[archive.files[0]]
        else:
            values = tiff_module(path).imread(path)
    except Exception as e:  # a sound header over values cut short or damaged: read around with skip_bad_files
        raise DataFileError(path, "arrays", f"cannot be read ({type(e).__name__}: {e})") from e
    values = values[None] if values.ndim == 2 else values
    return np.ascontiguousarray(values.transpose(2, 0, 1) if header.channels_last else values)


@dataclass
class ArraySplit:
    """One split's files, labels and (C, H, W) per file; one channel count and dtype for all of them."""

    files: list[str]
    labels: list[int]
    shapes: np.ndarray  # int64 (N, 3)
    channels: int
    dtype: str

    def __len__(self) -> int:
        return len(self.files)

    @property
    def torch_dtype(self) -> torch.dtype:
        return TORCH_DTYPES[self.dtype]

    def shape(self, i: int) -> tuple[int, int, int]:
        return tuple(int(v) for v in self.shapes[i])  # type: ignore[return-value]

    def stored(self, i: int) -> np.ndarray:
        """File ``i``'s values, (C, H, W) in C order, flat: what ``read_batches`` puts back to back."""
        return read_array(self.files[i]).reshape(-1)

    def read(self, i: int, in_chans: int) -> torch.Tensor:
        """float32 (C, H, W) in stored units: the CPU path crops it in a loader worker."""
        if in_chans != self.channels:
            raise UsageError(f"in_chans={in_chans} but the arrays hold {self.channels} channels ({self.files[i]})")
        return torch.from_numpy(read_array(self.files[i]).astype(np.float32))


def index_arrays(data_dir: str) -> FolderIndex:
    """Both splits' files and headers; a UsageError of one line naming the first faulty file or folder."""
    index = index_imagefolder(data_dir, ARRAY_SUFFIXES, dataset="arrays")
    first = read_header(index.train.files[0])

    def split(files: list[str], labels: list[int]) -> ArraySplit:
        shapes = []
        for file in files:
            header = read_header(file)
            if (header.channels, header.dtype) != (first.channels, first.dtype):
                raise bad_file(
                    file,
                    f"{header.channels} channels of {header.dtype} where {index.train.files[0]} has "
                    f"{first.channels} of {first.dtype} (one channel count and dtype per folder)",
                )
            shapes.append((header.channels, header.height, header.width))
        return ArraySplit(files, labels, np.asarray(shapes, dtype=np.int64), first.channels, first.dtype)

    return FolderIndex(
        index.classes, split(index.train.files, index.train.labels), split(index.val.files, index.val.labels)
    )


def channel_sums(file: str) -> tuple[int, list[float], list[float]]:
    """Pixels per channel, and each channel's sum and sum of squares, in float64."""
    values = read_array(file).astype(np.float64)
    flat = values.reshape(values.shape[0], -1)
    return flat.shape[1], flat.sum(axis=1).tolist(), np.square(flat).sum(axis=1).tolist()


def measure_stats(files: list[str], workers: int = 1) -> ChannelStats:
    """The per-channel mean and standard deviation over every value of ``files``."""
    parts = map_in_processes(channel_sums, files, workers=workers, chunksize=16)
    count = sum(p[0] for p in parts)
    sums = np.sum([p[1] for p in parts], axis=0).tolist()
    squares = np.sum([p[2] for p in parts], axis=0).tolist()
    return ChannelStats.from_sums(count, sums, squares)


def array_stats(data_dir: str, index: FolderIndex, workers: int = 1) -> ChannelStats:
    """The training split's per-channel statistics, measured once per node (``workers`` processes) and reused."""
    name = f"{source_key(data_dir, index)}-arrays-stats"

    def build(partial: Path) -> None:
        stats = measure_stats(index.train.files, workers)
        (partial / STATS_FILE).write_text(json.dumps({"mean": stats.mean, "std": stats.std}))

    done = build_once(cache_root(data_dir), name, build)
    stored = json.loads((done / STATS_FILE).read_text())
    return ChannelStats(tuple(stored["mean"]), tuple(stored["std"]))
