"""What a trial resumed from its checkpoint times its setup to: a first step of this driver's run, never before."""

from __future__ import annotations

from trainers.checkpointing import resumed_first_step


def test_a_group_started_again_in_the_same_trial_keeps_its_first_step():
    assert resumed_first_step(recorded=105.0, trial_started_at=100.0) == 105.0


def test_a_checkpoint_of_an_earlier_driver_times_setup_from_this_runs_first_step():
    # a resumed sweep: the checkpoint's first step predates this trial's start, so setup_s would be negative
    assert resumed_first_step(recorded=40.0, trial_started_at=100.0) is None


def test_a_checkpoint_taken_before_any_step_has_none():
    assert resumed_first_step(recorded=None, trial_started_at=100.0) is None
