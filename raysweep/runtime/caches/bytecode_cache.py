"""Compiled bytecode for a sweep's processes where Python cannot keep it beside the sources.

Every process of a sweep (the sweep's own, Tune's trial actors, Train's controllers and workers)
imports Ray and torch, and the ranks timm and DeepSpeed: thousands of modules, which Python loads
from the bytecode it compiled the first time (``__pycache__`` beside each source).  Where it cannot
keep that bytecode (site-packages read-only with its bytecode missing or older than the sources, as
container images often ship, or ``PYTHONDONTWRITEBYTECODE`` set) every process compiles them all
again, seconds of every rank's start (docs/performance.md gives the measured cost).  There the sweep's
processes keep their bytecode under one directory of the user's (Python's ``PYTHONPYCACHEPREFIX``), so
that only the first process on a node compiles each module.  Elsewhere nothing changes, and a prefix the
user set is left as it is.
"""

from __future__ import annotations

import importlib.util
import os
import sys
from collections.abc import Iterator
from contextlib import contextmanager
from pathlib import Path

# What the ranks import (sympy through torch's compiler stack, which DeepSpeed and torchvision import).
PACKAGES = ("torch", "sympy", "timm", "deepspeed", "ray")
# Under the user's home, not a shared temporary directory: bytecode found there is executed.
CACHE_DIR = Path("~/.cache/raysweep/pycache")


def bytecode_cache_env(packages: tuple[str, ...] = PACKAGES, cache_dir: Path = CACHE_DIR) -> dict[str, str]:
    """Environment variables that give a sweep's processes a bytecode cache, or {} where none is needed.

    Needed where a package's modules have no current bytecode and Python cannot write it (it writes
    none, or their ``__pycache__`` is read-only).  Not where the user chose a prefix already.
    """
    if sys.pycache_prefix is not None or all(keeps_bytecode(d) for d in package_dirs(packages)):
        return {}
    # An empty PYTHONDONTWRITEBYTECODE counts as unset.
    return {"PYTHONPYCACHEPREFIX": str(cache_dir.expanduser()), "PYTHONDONTWRITEBYTECODE": ""}


@contextmanager
def bytecode_cache(packages: tuple[str, ...] = PACKAGES, cache_dir: Path = CACHE_DIR) -> Iterator[dict[str, str]]:
    """Where a sweep needs the cache (``bytecode_cache_env``), this process's imports use and fill it
    while the sweep runs; gives the environment variables that give it to the sweep's other processes
    (Ray's runtime environment)."""
    env = bytecode_cache_env(packages, cache_dir)
    saved = sys.pycache_prefix, sys.dont_write_bytecode
    if env:
        sys.pycache_prefix, sys.dont_write_bytecode = env["PYTHONPYCACHEPREFIX"], False
    try:
        yield env
    finally:
        sys.pycache_prefix, sys.dont_write_bytecode = saved


def package_dirs(packages: tuple[str, ...]) -> list[Path]:
    """The directories of those packages that are installed, found without importing them."""
    dirs = []
    for name in packages:
        spec = importlib.util.find_spec(name) if name not in sys.modules else sys.modules[name].__spec__
        if spec is not None and spec.origin and spec.origin.endswith("__init__.py"):
            dirs.append(Path(spec.origin).parent)
    return dirs


def keeps_bytecode(package_dir: Path) -> bool:
    """Whether Python loads the modules directly in ``package_dir`` from bytecode: it has them all
    current, or it can write them into the package's ``__pycache__``."""
    if all(bytecode_is_current(source) for source in sorted(package_dir.glob("*.py"))):
        return True
    if sys.dont_write_bytecode:
        return False
    pycache = package_dir / "__pycache__"
    return os.access(pycache if pycache.is_dir() else package_dir, os.W_OK)


def bytecode_is_current(source: Path) -> bool:
    """Whether ``__pycache__`` holds bytecode of ``source`` that this Python would load without compiling.

    The header of a ``.pyc`` (PEP 552): magic number, flags, then for timestamp-based bytecode
    (flags 0) the source's modification time and size, which must match the source's.
    """
    try:
        with open(importlib.util.cache_from_source(str(source)), "rb") as f:
            header = f.read(16)
        stat = source.stat()
    except (OSError, ValueError):
        return False
    if len(header) < 16 or header[:4] != importlib.util.MAGIC_NUMBER:
        return False
    if int.from_bytes(header[4:8], "little") != 0:
        return True  # hash-based bytecode: its source's times do not matter
    mtime, size = int.from_bytes(header[8:12], "little"), int.from_bytes(header[12:16], "little")
    return mtime == int(stat.st_mtime) & 0xFFFFFFFF and size == stat.st_size & 0xFFFFFFFF
