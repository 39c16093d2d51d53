"""How a trial ended: the one vocabulary of the ``status`` column, the terminal view and the API."""

from __future__ import annotations

from enum import Enum


class TrialStatus(str, Enum):
    """A trial's outcome, written as its value (``completed`` ...) in the tables."""

    COMPLETED = "completed"  # reached its last epoch
    FAILED = "failed"  # an error, or ended before its last epoch
    OOM = "oom"  # out of device memory
    STOPPED = "stopped"  # stopped early by a Tune scheduler; its epochs so far are real measurements
    INTERRUPTED = "interrupted"  # the sweep was interrupted (Ctrl-C, SIGTERM) while it ran; resume runs it again

    def __str__(self) -> str:
        return self.value

    @classmethod
    def values(cls) -> tuple[str, ...]:
        return tuple(s.value for s in cls)
