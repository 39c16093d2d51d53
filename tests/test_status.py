"""The one outcome rule of a trial, and the retry rule that follows from it (known answers, no Ray started)."""

from __future__ import annotations

import pytest

from raysweep.core.errors import RankOutOfMemory
from raysweep.core.status import TrialStatus, is_completed, trial_outcome
from raysweep.runtime.retry import retried


@pytest.mark.parametrize(
    ("last_result", "error", "expected"),
    [
        ({"epoch": 1, "final": True}, None, TrialStatus.COMPLETED),
        ({"epoch": 0, "final": False}, None, TrialStatus.STOPPED),  # ended early without an error: stopped
        ({}, None, TrialStatus.COMPLETED),  # no report: its driver skipped it, it had completed before
        ({"final": True}, "RuntimeError: boom", TrialStatus.FAILED),  # an error outweighs any result
        ({}, "torch.OutOfMemoryError: CUDA out of memory", TrialStatus.OOM),
        ({}, str(RankOutOfMemory(1, "injected", 2.0)), TrialStatus.OOM),
        ({}, "ray.exceptions.OutOfMemoryError: Task was killed due to the node running low on memory", TrialStatus.OOM),
    ],
)
def test_the_outcome_rule(last_result, error, expected):
    assert trial_outcome(last_result, error) is expected


def test_a_table_status_is_completed_only_as_the_completed_value():
    assert is_completed("completed") and not is_completed("oom") and not is_completed(None)


@pytest.mark.parametrize(
    ("failure", "attempt", "max_failures", "expected"),
    [
        (RuntimeError("rank 1 died"), 0, 2, True),
        (RuntimeError("rank 1 died"), 2, 2, False),  # restarts spent
        (RuntimeError("rank 1 died"), 0, 0, False),
        (RankOutOfMemory(0, "CUDA out of memory", 7.0), 0, 2, False),  # would fail the same way
    ],
)
def test_a_failed_attempt_is_retried_until_the_restarts_are_spent_and_never_after_out_of_memory(
    failure, attempt, max_failures, expected
):
    assert retried(failure, attempt, max_failures) is expected
