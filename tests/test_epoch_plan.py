"""Known answers of the epoch plan: warm-up after the start, profiled steps after the timed ones."""

from raysweep.core.params import TrialParams
from trainers.epoch_plan import EpochPlan


def plan(start_epoch: int = 0, **values) -> EpochPlan:
    params = TrialParams(**({"micro_batch_per_worker": 8, "train_samples": 80, "epochs": 2} | values))
    return EpochPlan.of(params, data=None, start_epoch=start_epoch)  # train_samples > 0: no data is read


def test_profile_takes_the_last_steps_of_the_last_epoch_beyond_five_timed():
    p = plan(num_workers=2, profile_steps=3, micro_batch_per_worker=4)  # 10 steps per epoch
    assert (p.steps_per_epoch, p.profiled_steps(0), p.profiled_steps(1)) == (10, 0, 3)
    short = plan(num_workers=2, profile_steps=3, train_samples=56, micro_batch_per_worker=4)  # 7 steps
    assert short.profiled_steps(1) == 2


def test_one_rank_is_not_profiled():
    assert plan(num_workers=1, profile_steps=3).profiled_steps(1) == 0


def test_a_slowed_trial_warms_up_at_least_one_step_to_calibrate_on():
    p = plan(num_workers=2, slow_ranks="1", warmup_steps=0)
    assert p.warmup.untimed_steps(0) == 1
    assert plan(num_workers=2, warmup_steps=0).warmup.untimed_steps(0) == 0


def test_a_restart_warms_up_again():
    assert plan(start_epoch=1, warmup_steps=2).warmup.untimed_steps(1) == 2
