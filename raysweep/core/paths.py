"""Paths as the user typed them: resolved once, in the driver, against the caller's working directory.

A Ray worker runs in a directory of Ray's own and Tune reads a relative storage path as a URI, so every path
a user gives (results dir, data dir, space file, resume dir, output files) is made absolute where it is
typed (``user_path``), before anything is checked, planned or shipped. What raysweep prints back for the
user to run (``shell_path``) is relative to the working directory when it lies inside it, so a printed
command reads as the user wrote it and runs as printed from the same directory.
"""

from __future__ import annotations

import os
import shlex
from pathlib import Path


def user_path(path: str | os.PathLike[str]) -> Path:
    """``path`` made absolute against the working directory (``~`` expanded, ``..`` folded, links kept)."""
    return Path(os.path.abspath(os.path.expanduser(os.fspath(path))))


def shell_path(path: str | os.PathLike[str]) -> str:
    """``path`` as a command-line argument: relative to the working directory when inside it, quoted if needed."""
    absolute = user_path(path)
    try:
        shown = str(absolute.relative_to(Path.cwd()))
    except ValueError:
        shown = str(absolute)
    return shlex.quote(shown)
