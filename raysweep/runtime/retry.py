"""The one retry rule of a trial whose worker group failed (a rank killed, a collective timed out)."""

from __future__ import annotations

from raysweep.core.errors import DataFileError
from raysweep.core.status import TrialStatus, trial_outcome
from raysweep.runtime.failures import find_error


def retried(failure: BaseException, attempt: int, max_failures: int) -> bool:
    """Whether attempt number ``attempt`` (from 0), failed with ``failure``, is started again.

    Up to ``max_failures`` restarts, each resuming from the trial's latest checkpoint; never after
    running out of memory or meeting a file the dataset cannot read, which would fail the same way.
    """
    if find_error(failure, DataFileError) is not None:
        return False
    return attempt < max_failures and trial_outcome({}, str(failure)) is not TrialStatus.OOM
