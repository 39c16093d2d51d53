"""Copies of an image folder built once per node and reused by every later trial: where they live, their key,
the lock that makes one builder of many, and the processes that build them.

``trainers.data.prepared`` (a JPEG copy at 256 px) and ``trainers.data.pixel_copy`` (decoded pixels, memory-mapped)
are built through ``build_once``: into ``<name>.partial`` under ``<name>.lock`` (flock), marked complete and
renamed when done, so a crashed build is redone, never read, and concurrent trials on one node build once.
"""

from __future__ import annotations

import fcntl
import hashlib
import multiprocessing
import os
import shutil
from collections.abc import Callable, Iterable
from concurrent.futures import ProcessPoolExecutor
from pathlib import Path

from trainers.data.imagefolder import FolderIndex

COMPLETE_MARKER = "COMPLETE"
# training files whose header sizes stand for the folder (headers only: milliseconds)
SIZE_SAMPLE = 64


def cache_root(data_dir: str) -> Path:
    """``<data_dir>/.raysweep-prepared`` when ``data_dir`` is writable, else ``~/.cache/raysweep/prepared``."""
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


def build_once(root: Path, name: str, build: Callable[[Path], None]) -> Path:
    """``root/name``, complete: ``build(folder)`` fills a fresh folder unless an earlier build finished."""
    root.mkdir(parents=True, exist_ok=True)
    done = root / name
    with open(root / f"{name}.lock", "w") as lock:
        fcntl.flock(lock, fcntl.LOCK_EX)  # one builder per node; the others block here, then find it built
        if (done / COMPLETE_MARKER).is_file():
            return done
        partial = root / f"{name}.partial"
        shutil.rmtree(partial, ignore_errors=True)
        partial.mkdir()
        build(partial)
        (partial / COMPLETE_MARKER).touch()
        partial.rename(done)
    return done


def map_in_processes(function: Callable, *iterables: Iterable, workers: int, chunksize: int = 1) -> list:
    """``list(map(function, *iterables))``, in ``workers`` spawned processes when more than one.

    Spawned, not forked: the caller may hold a CUDA context.  Each process works on one thread:
    torch's default of one thread per core in each of ``workers`` processes oversubscribes the host.
    """
    if workers <= 1:
        return list(map(function, *iterables))
    context = multiprocessing.get_context("spawn")
    with ProcessPoolExecutor(workers, mp_context=context, initializer=one_thread) as pool:
        return list(pool.map(function, *iterables, chunksize=chunksize))


def one_thread() -> None:
    import torch

    torch.set_num_threads(1)


def sampled_sizes(files: list[str]) -> list[tuple[int, int]]:
    """(width, height) of up to SIZE_SAMPLE files spread evenly over ``files``, read from their headers."""
    from PIL import Image

    step = max(1, len(files) // SIZE_SAMPLE)
    sizes = []
    for file in files[::step][:SIZE_SAMPLE]:
        try:
            with Image.open(file) as img:
                sizes.append(img.size)
        except Exception:  # an unreadable file is reported by name when it is decoded, not here
            continue
    return sizes
