"""Space keys and flags for Tune's schedulers and searchers: parsed, checked before Ray starts, and planned."""

from __future__ import annotations

import pytest

from raysweep.api import check_sweep, resolve_space
from raysweep.core.errors import UsageError
from raysweep.options import SweepOptions
from raysweep.planning.search_config import SchedulerConfig, SearchChoices, describe, scheduler_from
from raysweep.planning.space import space_from_mapping

LR = {"loguniform": [1.0e-4, 1.0e-2]}


def space(**keys):
    doc = {"axes": {"micro_batch_per_worker": [16, 64], "lr": LR}, "fixed": {"epochs": 4}, **keys}
    return space_from_mapping("s", doc, "s.yaml")


def test_asha_rungs_are_the_grace_period_times_powers_of_the_reduction_factor_below_max_epochs():
    assert SchedulerConfig("asha", grace_period=1, reduction_factor=2).rungs(9) == [1, 2, 4, 8]
    assert SchedulerConfig("asha", grace_period=2, reduction_factor=3, max_epochs=20).rungs(30) == [2, 6, 18]
    assert SchedulerConfig("median", grace_period=2).rungs(5) == [2, 3, 4]


def test_a_space_names_its_scheduler_and_search():
    s = space(metric="train_loss", mode="min", scheduler={"kind": "asha", "grace_period": 2}, search="optuna")
    assert (s.search.search, s.search.metric, s.search.mode) == ("optuna", "train_loss", "min")
    assert s.search.scheduler == SchedulerConfig("asha", grace_period=2)


def test_optuna_plans_one_template_per_grid_point_and_random_draws_num_samples_in_all():
    assert len(space(search="optuna", num_samples=5).expand()) == 2
    assert len(space(search="grid", num_samples=3).expand()) == 6
    drawn = space(search="random", num_samples=7).expand()
    assert len(drawn) == 7 and {t.micro_batch_per_worker for t in drawn} <= {16, 64}


def test_the_flags_replace_the_space_keys():
    s = resolve_space({"axes": {"lr": LR}}, {}, SearchChoices(search="optuna", scheduler="median", num_samples=3))
    assert (s.search.search, s.search.scheduler.kind, s.num_samples) == ("optuna", "median", 3)


@pytest.mark.parametrize(
    ("keys", "choices", "message"),
    [
        ({"scheduler": "hyperband"}, SearchChoices(), "unknown scheduler 'hyperband'"),
        ({}, SearchChoices(search="bayesopt"), "unknown search 'bayesopt'"),
        ({}, SearchChoices(metric="accuracy"), "metric 'accuracy' is not reported by any trial"),
        ({"mode": "up"}, SearchChoices(), "mode must be min or max"),
        ({}, SearchChoices(num_samples=0), "--num-samples must be at least 1"),
        ({"scheduler": {"kind": "asha", "grace_period": 5}}, SearchChoices(), "grace_period 5 is above"),
        ({"scheduler": {"kind": "asha", "reduction_factor": 1}}, SearchChoices(), "reduction_factor must be"),
        ({"scheduler": {"kind": "asha", "rungs": 3}}, SearchChoices(), "unknown scheduler option 'rungs'"),
    ],
)
def test_bad_search_input_is_one_line_before_ray_starts(keys, choices, message):
    with pytest.raises(UsageError, match=message):
        check_sweep(SweepOptions(), space(**keys).with_search(choices))


def test_optuna_needs_a_distribution_and_plain_choice_values():
    grid_only = space_from_mapping("s", {"axes": {"micro_batch_per_worker": [16]}, "search": "optuna"}, "s.yaml")
    with pytest.raises(UsageError, match="at least one distribution axis"):
        check_sweep(SweepOptions(), grid_only)
    odd = space_from_mapping("s", {"axes": {"slow_ranks": {"choice": [[0], [0]]}}, "search": "optuna"}, "s.yaml")
    with pytest.raises(UsageError, match="choice values must be numbers or strings"):
        check_sweep(SweepOptions(), odd)


def test_the_adaptive_plan_names_rungs_and_budget():
    lines = describe(space(scheduler="asha").search, trial_epochs=4, trials=10)
    assert "may stop a trial after epoch 1, 2" in lines[1]
    assert lines[2] == "budget: 10 trials, at most 4 epochs each"


def test_none_is_no_scheduler():
    assert scheduler_from("none", "s.yaml") is None
