"""An image folder prepared once per node: every image resized to 256 px on its short side, JPEG quality 90.

A 256 px JPEG is cheaper to decode and crop to 224 px than a larger one, and fewer bytes to read
(docs/data.md gives the figures), so every trial of a sweep after the first reads and decodes less.
The cache is keyed by the source's file list, sizes and mtimes: a changed source gets a new key, hence
a new build.  Concurrent trials on one node build it once, under a lock file; the others wait for it,
then reuse it.

Trials read it with ``prepare=auto`` (the default) when it pays: the source's images are larger than
256 px on the short side (the median of an evenly spaced sample of the training files) and the trial's
resolution needs no more (validation resizes to ``image_size / 0.875``: 256 at 224 px).  The build runs
in the first trial's rank on each node, in its ``loader_workers`` processes; later trials find it built.

A source file that cannot be decoded has no copy (``UNCOPIED`` lists it): trials read it from the source,
where it fails as it would without the copy (it stops the sweep, or ``skip_bad_files`` reads around it).

Location: ``<data_dir>/.raysweep-prepared/<key>/`` when ``data_dir`` is writable, else
``~/.cache/raysweep/prepared/<key>/``; smaller than the source where its images are larger.
Old keys are not removed (delete the folder to reclaim the space).
"""

from __future__ import annotations

import os
import statistics
from pathlib import Path

from raysweep.core.errors import DataFileError
from trainers.data.crops import resized_to, val_short_side
from trainers.data.imagefolder import FolderIndex, FolderSplit, decode_file, index_imagefolder
from trainers.data.node_cache import build_once, cache_root, map_in_processes, sampled_sizes, source_key

SHORT_SIDE = 256
JPEG_QUALITY = 90
# files per task handed to a build process
BUILD_CHUNK = 64
# In a copy: the source files it has no copy of (one path a line), since they cannot be decoded.
UNCOPIED = "uncopied.txt"


def write_resized(source: str, target: Path) -> str | None:
    """Write ``source``'s copy at ``target``; ``source`` itself where it cannot be decoded (no copy written)."""
    from torchcodec.encoders import JpegEncoder

    try:
        image = resized_to(decode_file(source, 3), SHORT_SIDE)
    except DataFileError:
        return source
    target.write_bytes(JpegEncoder(image.contiguous()).to_tensor(quality=JPEG_QUALITY).numpy().tobytes())
    return None


def copy_name(data_dir: str, file: str) -> str:
    """The copy's path of ``file`` relative to the copy's root: "0.png" becomes "0.png.jpg" (no clash with "0.jpg")."""
    relative = os.path.relpath(file, data_dir)
    return relative if relative.lower().endswith((".jpg", ".jpeg")) else relative + ".jpg"


def median_short_side(files: list[str]) -> int:
    """The median shorter side of a sample of ``files`` spread evenly over the list, read from their headers."""
    sides = [min(size) for size in sampled_sizes(files)]
    return int(statistics.median(sides)) if sides else 0


def pays_to_prepare(index: FolderIndex, image_size: int) -> bool:
    """Whether reading the copy saves work without losing pixels the trial's crops would use."""
    return val_short_side(image_size) <= SHORT_SIDE < median_short_side(index.train.files)


def prepare_imagefolder(data_dir: str, index: FolderIndex | None = None, workers: int = 1) -> str:
    """The prepared copy of ``data_dir`` (same train/val/<class>/ layout), built here unless already built.

    ``workers`` > 1 builds in that many processes.
    """
    index = index or index_imagefolder(data_dir)

    def build(partial: Path) -> None:
        sources = index.train.files + index.val.files
        targets = [partial / copy_name(data_dir, f) for f in sources]
        for folder in {t.parent for t in targets}:
            folder.mkdir(parents=True, exist_ok=True)
        uncopied = map_in_processes(write_resized, sources, targets, workers=workers, chunksize=BUILD_CHUNK)
        (partial / UNCOPIED).write_text("".join(f"{source}\n" for source in uncopied if source is not None))

    return str(build_once(cache_root(data_dir), source_key(data_dir, index), build))


def prepared_index(data_dir: str, index: FolderIndex, workers: int = 1) -> FolderIndex:
    """``index`` with every file replaced by its prepared copy, in the same order (built first if needed); a file
    with no copy (it cannot be decoded) stays the source's."""
    copy = prepare_imagefolder(data_dir, index, workers)
    uncopied_list = Path(copy) / UNCOPIED
    uncopied = set(uncopied_list.read_text().splitlines()) if uncopied_list.is_file() else set()

    def moved(split: FolderSplit) -> FolderSplit:
        files = [f if f in uncopied else os.path.join(copy, copy_name(data_dir, f)) for f in split.files]
        return FolderSplit(files, split.labels)

    return FolderIndex(index.classes, moved(index.train), moved(index.val))
