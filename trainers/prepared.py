"""An image folder prepared once per node: every image resized to 256 px on its short side, JPEG quality 90.

Decoding and cropping a 341x256 JPEG costs about 0.73x a 500x375 one (measured on this project's CPU
host: 438 vs 319 images/s per core, to a 224 px RandomResizedCrop), and the files are 0.58x the
bytes, so every trial of a sweep after the first reads and decodes less.  The cache is keyed by the
source's file list, sizes and mtimes: a changed source gets a new key, hence a new build.  Concurrent
trials on one node build it once, under a lock file; the others wait for it, then reuse it.

Trials read it with ``prepare=auto`` (the default) when it pays: the source's images are larger than
256 px on the short side (the median of an evenly spaced sample of the training files) and the trial's
resolution needs no more (validation resizes to ``image_size / 0.875``: 256 at 224 px).  The build runs
in the first trial's rank on each node, in its ``loader_workers`` processes; later trials find it built.

Location: ``<data_dir>/.raysweep-prepared/<key>/`` when ``data_dir`` is writable, else
``~/.cache/raysweep/prepared/<key>/``; about 0.6x the source's size for ImageNet-shaped JPEGs.
Old keys are not removed (delete the folder to reclaim the space).
"""

from __future__ import annotations

import fcntl
import hashlib
import multiprocessing
import os
import shutil
import statistics
from concurrent.futures import ProcessPoolExecutor
from pathlib import Path

from trainers.crops import val_short_side
from trainers.imagefolder import FolderIndex, FolderSplit, decode_file, index_imagefolder

SHORT_SIDE = 256
JPEG_QUALITY = 90
COMPLETE_MARKER = "COMPLETE"
# training files whose sizes decide whether the copy pays (headers only: milliseconds)
SIZE_SAMPLE = 64
# files per task handed to a build process
BUILD_CHUNK = 64


def prepared_root(data_dir: str) -> Path:
    beside = Path(data_dir) / ".raysweep-prepared"
    if os.access(data_dir, os.W_OK):
        return beside
    return Path.home() / ".cache" / "raysweep" / "prepared"


def source_key(data_dir: str, index: FolderIndex) -> str:
    """A digest of every file's path below ``data_dir``, size and mtime: any change gives a new key."""
    digest = hashlib.sha256(str(Path(data_dir).resolve()).encode())
    for file in index.train.files + index.val.files:
        stat = os.stat(file)
        digest.update(f"{os.path.relpath(file, data_dir)}\0{stat.st_size}\0{stat.st_mtime_ns}\n".encode())
    return digest.hexdigest()[:16]


def write_resized(source: str, target: Path) -> None:
    from torchvision.io import encode_jpeg
    from torchvision.transforms.v2.functional import resize

    image = decode_file(source, 3)
    if min(image.shape[-2:]) > SHORT_SIDE:
        image = resize(image, [SHORT_SIDE], antialias=True)
    target.write_bytes(encode_jpeg(image, quality=JPEG_QUALITY).numpy().tobytes())


def copy_name(data_dir: str, file: str) -> str:
    """The copy's path of ``file`` relative to the copy's root: "0.png" becomes "0.png.jpg" (no clash with "0.jpg")."""
    relative = os.path.relpath(file, data_dir)
    return relative if relative.lower().endswith((".jpg", ".jpeg")) else relative + ".jpg"


def median_short_side(files: list[str]) -> int:
    """The median shorter side of up to SIZE_SAMPLE files spread evenly over ``files``, read from their headers."""
    from PIL import Image

    step = max(1, len(files) // SIZE_SAMPLE)
    sides = []
    for file in files[::step][:SIZE_SAMPLE]:
        try:
            with Image.open(file) as img:
                sides.append(min(img.size))
        except Exception:  # an unreadable file is reported by name when it is decoded, not here
            continue
    return int(statistics.median(sides)) if sides else 0


def pays_to_prepare(index: FolderIndex, image_size: int) -> bool:
    """Whether reading the copy saves work without losing pixels the trial's crops would use."""
    return val_short_side(image_size) <= SHORT_SIDE < median_short_side(index.train.files)


def prepare_imagefolder(data_dir: str, index: FolderIndex | None = None, workers: int = 1) -> str:
    """The prepared copy of ``data_dir`` (same train/val/<class>/ layout), built here unless already built.

    ``workers`` > 1 builds in that many spawned processes (not forked: the caller may hold a CUDA context).
    """
    index = index or index_imagefolder(data_dir)
    root = prepared_root(data_dir)
    root.mkdir(parents=True, exist_ok=True)
    key = source_key(data_dir, index)
    done = root / key
    with open(root / f"{key}.lock", "w") as lock:
        fcntl.flock(lock, fcntl.LOCK_EX)  # one builder per node; the others block here, then find it built
        if (done / COMPLETE_MARKER).is_file():
            return str(done)
        partial = root / f"{key}.partial"
        shutil.rmtree(partial, ignore_errors=True)
        sources = index.train.files + index.val.files
        targets = [partial / copy_name(data_dir, f) for f in sources]
        for folder in {t.parent for t in targets}:
            folder.mkdir(parents=True, exist_ok=True)
        if workers > 1:
            context = multiprocessing.get_context("spawn")
            with ProcessPoolExecutor(workers, mp_context=context) as pool:
                list(pool.map(write_resized, sources, targets, chunksize=BUILD_CHUNK))
        else:
            for source, target in zip(sources, targets):
                write_resized(source, target)
        (partial / COMPLETE_MARKER).touch()
        partial.rename(done)
    return str(done)


def prepared_index(data_dir: str, index: FolderIndex, workers: int = 1) -> FolderIndex:
    """``index`` with every file replaced by its prepared copy, in the same order (built first if needed)."""
    copy = prepare_imagefolder(data_dir, index, workers)

    def moved(split: FolderSplit) -> FolderSplit:
        return FolderSplit([os.path.join(copy, copy_name(data_dir, f)) for f in split.files], split.labels)

    return FolderIndex(index.classes, moved(index.train), moved(index.val))
