"""One sweep per directory: the process running a sweep holds an exclusive OS lock on it.

The lock is ``flock`` on the sweep directory itself: the kernel drops it when the process ends, however it
ends (``kill -9`` included), so a lock is never stale, and taking it writes nothing into the directory. The
holder names itself in ``<sweep>/.running`` (process, host, start time), removed as it lets go, so a refused
second sweep or ``--resume`` can say which run holds the directory.
"""

from __future__ import annotations

import fcntl
import json
import os
import socket
import time
from pathlib import Path

from raysweep.core.errors import UsageError

HOLDER_FILE = ".running"


class SweepRunning(UsageError):
    """Another process holds the sweep directory's lock: it is running that sweep now."""


class SweepLock:
    """The held lock of one sweep directory; released by ``release`` or when the process ends."""

    def __init__(self, root: Path, fd: int):
        self.root, self.fd = root, fd

    def release(self) -> None:
        if self.fd >= 0:
            (self.root / HOLDER_FILE).unlink(missing_ok=True)
            os.close(self.fd)  # closing the only descriptor drops the flock
            self.fd = -1


def lock_sweep(root: Path, what: str) -> SweepLock:
    """Take ``root``'s lock for this process, or raise ``SweepRunning`` naming the process that holds it.

    ``what`` names the attempt in the message (``sweep NAME`` or ``--resume DIR``). ``root`` must exist.
    """
    fd = os.open(root, os.O_RDONLY | os.O_DIRECTORY)  # not inherited by the processes this one starts
    try:
        fcntl.flock(fd, fcntl.LOCK_EX | fcntl.LOCK_NB)
    except BlockingIOError:
        os.close(fd)
        raise SweepRunning(
            f"{what}: {root} is in use by a running sweep ({read_holder(root / HOLDER_FILE)}); wait for it to end"
        ) from None
    (root / HOLDER_FILE).write_text(json.dumps(holder_record()))
    return SweepLock(root, fd)


def holder_record() -> dict:
    return {"pid": os.getpid(), "host": socket.gethostname(), "since": time.strftime("%Y-%m-%dT%H:%M:%S%z")}


def read_holder(path: Path) -> str:
    """``process P on host H since T``, from what the holder wrote (if it has written it yet)."""
    try:
        record = json.loads(path.read_text() or "{}")
    except (OSError, ValueError):
        record = {}
    if "pid" not in record:
        return "its process has only just started"
    return f"process {record['pid']} on host {record.get('host', '?')} since {record.get('since', '?')}"
