"""Accuracy findings state each point's budget, and a fall is put down to the batch size only between
step-matched points (known answers)."""

from __future__ import annotations

import pandas as pd
import pytest

from analysis.rows.budget import STEP_FACTOR, Budget, budget_of, fall_cause, step_matched, steps_ratio


def rows(epochs: int, steps: list[int], global_batch: int) -> pd.DataFrame:
    return pd.DataFrame({"epochs": epochs, "optimizer_steps": steps, "global_batch": global_batch})


def test_a_points_budget_is_the_median_of_its_trials_epochs_steps_and_samples():
    budget = budget_of(rows(5, [445, 445, 440], 16))
    assert budget == Budget(5.0, 445.0, 7120.0)
    assert budget.text() == "5 epochs, 445 optimizer steps, 7120 samples"
    assert budget_of(pd.DataFrame({"epochs": [5], "global_batch": [16]})) is None  # steps not recorded
    assert budget_of(rows(5, [], 16)) is None


def test_the_default_grids_ends_differ_18_fold_in_steps_and_are_not_step_matched():
    small, large = Budget(5, 445, 7120), Budget(5, 25, 6400)
    assert steps_ratio(small, large) == steps_ratio(large, small) == pytest.approx(17.8)
    assert not step_matched(small, large)
    said = fall_cause(small, large, "micro batch 256")
    assert said.startswith("micro batch 256 trained 18x fewer optimizer steps")
    assert "not put down to the batch size without a step-matched comparison" in said


def test_points_within_the_factor_are_step_matched_and_the_fall_is_the_batch_sizes():
    small, large = Budget(1, 100, 1600), Budget(20, 100 * STEP_FACTOR, 51200)
    assert step_matched(small, large)
    assert fall_cause(small, large, "micro batch 256").startswith("the points trained within 2x the same optimizer")
    assert "cannot be put down" in fall_cause(None, large, "micro batch 256")
