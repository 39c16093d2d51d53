"""How a trial ended: the one vocabulary of the ``status`` column, the terminal view and the API, and its rule."""

from __future__ import annotations

from collections.abc import Mapping
from enum import Enum
from typing import Any

from raysweep.core.errors import is_out_of_memory


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


# The key of a rank's report that says it was the trial's last epoch.
FINAL_KEY = "final"


def reached_last_epoch(last_result: Mapping[str, Any]) -> bool:
    """Whether a trial's last result was its last epoch's report.

    A trial with no report at all ended normally only where its driver skipped it: it had completed
    before a resume (its row says so).
    """
    return FINAL_KEY not in last_result or bool(last_result[FINAL_KEY])


def trial_outcome(last_result: Mapping[str, Any], error: str | None = None) -> TrialStatus:
    """The one outcome rule: a trial that raised is ``oom`` if it ran out of memory, else ``failed``;
    one that ended normally is ``completed`` if it reached its last epoch, else ``stopped`` (Tune ends a
    trial early without an error only when the sweep's scheduler stops it)."""
    if error is not None:
        return TrialStatus.OOM if is_out_of_memory(error) else TrialStatus.FAILED
    return TrialStatus.COMPLETED if reached_last_epoch(last_result) else TrialStatus.STOPPED


def is_completed(status: str | None) -> bool:
    """Whether a ``status`` value read from a table is ``completed``."""
    return status == TrialStatus.COMPLETED.value


def is_finished(status: str | None) -> bool:
    """Whether a trial with this ``status`` is done and not to run again: completed, or stopped by the scheduler."""
    return status in (TrialStatus.COMPLETED.value, TrialStatus.STOPPED.value)
