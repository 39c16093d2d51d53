"""An image folder decoded once per node into uint8 pixel files: trials then read, never decode.

Each image is decoded (``decode_file``: grey, CMYK and palettes converted), resized to the copy's short
side where larger (never upscaled) and its (C, H, W) bytes appended to a chunk file of its split; a
record per image (chunk, byte offset, height, width) finds it again.  A GPU rank's threads read a micro
batch's images straight from the page cache into one pinned tensor (``read_batches``) and the rank crops
them on its GPU in one ``roi_align`` call; a CPU rank's loader workers read and crop them one by one.
No JPEG is decoded after the build.  The page cache is the node's, shared by all its ranks; a copy
larger than memory still works, read from disk.

Trials read it with ``prepare=pixels``.  It costs disk: C x H x W bytes an image (262 KB at 341x256,
many times its JPEG; docs/data.md), checked against the free space before the build starts.  Location,
key, lock and invalidation as ``trainers.data.prepared``'s copy (``trainers.data.node_cache``):
``<root>/<key>-pixels-<short side>-c<channels>/``.
"""

from __future__ import annotations

import os
import shutil
from collections import deque
from collections.abc import Iterator
from concurrent.futures import Future, ThreadPoolExecutor
from dataclasses import dataclass, field
from pathlib import Path
from typing import Protocol

import numpy as np
import torch

from raysweep.core.errors import UsageError
from trainers.data.crops import resized_to, val_short_side
from trainers.data.imagefolder import FolderIndex, FolderSplit, decode_file
from trainers.data.node_cache import build_once, cache_root, map_in_processes, sampled_sizes, source_key
from trainers.data.prepared import SHORT_SIDE

# images per chunk file: one build task, one file (about 67 MB at 341x256)
CHUNK_IMAGES = 256
RECORDS = "records.npy"
# the free space a build wants beyond its estimate: the estimate comes from a sample of headers
SPACE_MARGIN = 1.1


@dataclass
class PixelSplit:
    """One split of a pixel copy: ``records`` int64 (N, 4) of chunk, byte offset, height, width; the labels."""

    folder: str
    records: np.ndarray
    labels: list[int]
    channels: int
    _chunks: dict = field(default_factory=dict, init=False, repr=False, compare=False)

    # what ``stored`` returns: ``read_batches`` reads arrays of other dtypes (``trainers.data.arrays``) the same way
    torch_dtype = torch.uint8

    def __len__(self) -> int:
        return len(self.labels)

    def __getstate__(self) -> dict:
        # a loader worker maps the chunks itself
        return {**self.__dict__, "_chunks": {}}

    def chunk(self, number: int) -> np.ndarray:
        """Chunk file ``number`` mapped privately: read on demand from the page cache, no descriptor kept open."""
        if number not in self._chunks:  # two reader threads may both map it: either mapping is the file
            path = os.path.join(self.folder, chunk_name(number))
            mapped = torch.from_file(path, shared=False, size=os.path.getsize(path), dtype=torch.uint8)
            self._chunks[number] = mapped.numpy()
        return self._chunks[number]

    def shape(self, i: int) -> tuple[int, int, int]:
        return self.channels, int(self.records[i, 2]), int(self.records[i, 3])

    def stored(self, i: int) -> np.ndarray:
        """Image ``i``'s bytes, (C, H, W) in C order, as a view of its mapped chunk."""
        c, h, w = self.shape(i)
        number, offset = int(self.records[i, 0]), int(self.records[i, 1])
        chunk = self.chunk(number)
        if offset + c * h * w > chunk.size:
            raise OSError(
                f"{os.path.join(self.folder, chunk_name(number))}: image {i} of the pixel copy ends past the "
                f"file's {chunk.size} bytes; delete {os.path.dirname(self.folder)} to have it rebuilt"
            )
        return chunk[offset : offset + c * h * w]

    def read(self, i: int, in_chans: int) -> torch.Tensor:
        """uint8 (C, H, W): image ``i`` as ``FolderSplit.read`` decodes it (resized to the copy's short side)."""
        if in_chans != self.channels:
            raise ValueError(f"this pixel copy holds {self.channels} channels, not {in_chans}")
        return torch.from_numpy(self.stored(i).copy()).view(*self.shape(i))


StoredBatch = tuple[tuple[torch.Tensor, torch.Tensor], torch.Tensor]


class StoredSplit(Protocol):
    """A split read without decoding: a pixel copy (``PixelSplit``) or a folder of arrays (``ArraySplit``)."""

    labels: list[int]
    torch_dtype: torch.dtype

    def shape(self, i: int) -> tuple[int, int, int]: ...

    def stored(self, i: int) -> np.ndarray: ...


def read_batches(
    split: StoredSplit, order: list[int], micro_batch: int, threads: int, pin: bool
) -> Iterator[StoredBatch]:
    """Micro batches of ``split`` in ``order``: ``((flat, shapes), labels)``, each batch's images in one tensor.

    ``flat`` is the images' bytes back to back (pinned when ``pin``, so it crosses to the GPU in one
    asynchronous copy), ``shapes`` int64 (B, 3) their (C, H, W).  ``threads`` threads of this process
    each read whole batches, up to ``threads + 1`` ahead of the one handed on, in one ``np.concatenate``
    from the mapped chunks: a batch's bytes are copied once, by numpy's loops, which let go of the GIL
    while they copy, with no Python run between images (one ``pread`` per image from many threads slowed
    the training step itself).  No loader process is involved: its batch would be copied twice more,
    into shared memory there and out of it into pinned memory here.
    """
    pool = ThreadPoolExecutor(max(1, threads), thread_name_prefix="raysweep-pixels")

    def read(indices: list[int]) -> StoredBatch:
        shapes = torch.tensor([split.shape(i) for i in indices], dtype=torch.int64)
        flat = torch.empty(int(shapes.prod(dim=1).sum()), dtype=split.torch_dtype, pin_memory=pin)
        np.concatenate([split.stored(i) for i in indices], out=flat.numpy())
        return (flat, shapes), torch.tensor([split.labels[i] for i in indices], dtype=torch.int64)

    pending: deque[Future] = deque()
    try:
        for first in range(0, len(order), micro_batch):
            pending.append(pool.submit(read, order[first : first + micro_batch]))
            if len(pending) > threads + 1:
                yield pending.popleft().result()
        while pending:
            yield pending.popleft().result()
    finally:
        pool.shutdown(wait=True, cancel_futures=True)


def chunk_name(number: int) -> str:
    return f"{number:05d}.u8"


def write_chunk(files: list[str], target: Path, short_side: int, in_chans: int) -> list[tuple[int, int]]:
    """Decode, resize and append ``files`` to ``target``; their (height, width) in order."""
    shapes = []
    with open(target, "wb") as out:
        for file in files:
            image = resized_to(decode_file(file, in_chans), short_side).contiguous()
            out.write(image.numpy().tobytes())
            shapes.append(tuple(image.shape[-2:]))
    return shapes


def records_of(shapes: list[list[tuple[int, int]]], channels: int) -> np.ndarray:
    """int64 (N, 4) of chunk, byte offset, height, width from each chunk's image shapes, in order."""
    rows = []
    for number, chunk in enumerate(shapes):
        offset = 0
        for h, w in chunk:
            rows.append((number, offset, h, w))
            offset += channels * h * w
    return np.asarray(rows, dtype=np.int64).reshape(-1, 4)


def estimated_bytes(index: FolderIndex, short_side: int, channels: int) -> int:
    """The copy's size from a sample of header sizes: each image's resized area x channels, x the file count."""
    sizes = sampled_sizes(index.train.files) or [(short_side, short_side)]
    areas = [w * h * (short_side / min(w, h)) ** 2 if min(w, h) > short_side else w * h for w, h in sizes]
    return int(sum(areas) / len(areas) * channels * (len(index.train) + len(index.val)))


def check_space(data_dir: str, root: Path, needed: int) -> None:
    root.mkdir(parents=True, exist_ok=True)
    free = shutil.disk_usage(root).free
    if needed * SPACE_MARGIN > free:
        raise UsageError(
            f"prepare=pixels: the pixel copy of {data_dir} needs about {needed / 2**30:.1f} GiB under {root}, "
            f"which has {free / 2**30:.1f} GiB free (prepare=auto reads a JPEG copy of about 0.6x the source)"
        )


def pixel_short_side(image_size: int) -> int:
    """The copy's short side: 256, or what validation at ``image_size`` resizes to where that is more."""
    return max(SHORT_SIDE, val_short_side(image_size))


def pixel_copy(data_dir: str, index: FolderIndex, image_size: int, in_chans: int, workers: int = 1) -> FolderIndex:
    """``index`` read from its pixel copy (built here with ``workers`` processes unless already built)."""
    short_side = pixel_short_side(image_size)
    root = cache_root(data_dir)
    name = f"{source_key(data_dir, index)}-pixels-{short_side}-c{in_chans}"
    splits = {"train": index.train, "val": index.val}

    def build(partial: Path) -> None:
        check_space(data_dir, root, estimated_bytes(index, short_side, in_chans))
        for split_name, split in splits.items():
            folder = partial / split_name
            folder.mkdir()
            chunks = [split.files[i : i + CHUNK_IMAGES] for i in range(0, len(split.files), CHUNK_IMAGES)]
            targets = [folder / chunk_name(n) for n in range(len(chunks))]
            count = len(chunks)
            shapes = map_in_processes(
                write_chunk, chunks, targets, [short_side] * count, [in_chans] * count, workers=workers
            )
            np.save(folder / RECORDS, records_of(shapes, in_chans))

    done = build_once(root, name, build)

    def read(split_name: str, split: FolderSplit) -> PixelSplit:
        folder = os.path.join(done, split_name)
        return PixelSplit(folder, np.load(os.path.join(folder, RECORDS)), split.labels, in_chans)

    return FolderIndex(index.classes, *(read(n, s) for n, s in splits.items()))
