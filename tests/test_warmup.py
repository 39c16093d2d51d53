"""Known answers of the warm-up plan: untimed steps per epoch after a start."""

from trainers.measure.warmup import WarmupPlan


def untimed(warmup_steps, start_epoch, steps_per_epoch, epochs):
    plan = WarmupPlan.after_start(warmup_steps, start_epoch, steps_per_epoch, epochs)
    return [plan.untimed_steps(e) for e in range(start_epoch, epochs)]


def test_fresh_start_warms_up_in_the_first_epoch_only():
    assert untimed(2, 0, 5, 3) == [2, 0, 0]


def test_warm_up_spills_into_the_next_epoch_when_longer_than_one():
    assert untimed(7, 0, 5, 3) == [5, 2, 0]


def test_restart_at_epoch_1_warms_up_again():
    # global step 5 is past a warm-up of 2 counted from the trial's start; the new process warms up anyway
    assert untimed(2, 1, 5, 3) == [2, 0]


def test_warm_up_longer_than_the_steps_keeps_one_timed_step():
    assert untimed(10, 0, 3, 2) == [3, 2]
    assert untimed(10, 1, 3, 2) == [2]
    assert untimed(10, 0, 1, 1) == [0]


def test_no_warm_up():
    assert untimed(0, 0, 4, 2) == [0, 0]
