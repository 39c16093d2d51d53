"""The sweep's economy (duty cycle, median setup) and the summary's varied columns: known answers."""

from __future__ import annotations

from datetime import datetime, timedelta, timezone

import pytest

from raysweep.core.schema import TRIALS, table_from_rows
from raysweep.results.economy import economy_line, sweep_economy
from raysweep.results.summary_table import varied_columns

T0 = datetime(2026, 1, 1, tzinfo=timezone.utc)


def trial(start_s: float, end_s: float, timed_s: float, setup_s: float, **config) -> dict:
    return {
        "trial_id": f"t{start_s}",
        "status": "completed",
        "started_at": T0 + timedelta(seconds=start_s),
        "finished_at": T0 + timedelta(seconds=end_s),
        "timed_s": timed_s,
        "setup_s": setup_s,
        "num_workers": 1,
        "micro_batch_per_worker": 32,
        "device": "gpu",
        "cpus_per_worker": 1.0,
        **config,
    }


def test_duty_cycle_is_timed_rank_seconds_over_wall_times_devices():
    trials = table_from_rows(
        "trials",
        [trial(0, 40, 20.0, 10.0), trial(40, 100, 30.0, 4.0, num_workers=2), trial(50, 90, 10.0, 6.0)],
    )
    economy = sweep_economy(trials, devices=2)
    # (20 x 1 + 30 x 2 + 10 x 1) rank-seconds over 100 s x 2 GPUs
    assert economy["wall_s"] == pytest.approx(100.0)
    assert economy["duty_cycle"] == pytest.approx(90 / 200)
    assert economy["median_setup_s"] == pytest.approx(6.0)
    assert economy["median_later_setup_s"] == pytest.approx(5.0)  # the first trial's 10 s left out
    assert economy_line(economy) == (
        "duty cycle 0.45 from the first trial (timed device-seconds / (wall x devices)), median setup 6.0 s"
    )


def test_from_launch_the_wall_includes_what_came_before_the_first_trial():
    trials = table_from_rows("trials", [trial(0, 40, 20.0, 10.0), trial(40, 100, 30.0, 4.0)])
    economy = sweep_economy(trials, devices=1, launched_at=T0 - timedelta(seconds=25))
    assert economy["wall_s"] == pytest.approx(100.0)
    assert economy["launch_wall_s"] == pytest.approx(125.0)
    assert economy["duty_cycle"] == pytest.approx(50 / 100)
    assert economy["duty_cycle_from_launch"] == pytest.approx(50 / 125)
    assert economy_line(economy) == (
        "duty cycle 0.50 from the first trial, 0.40 from launch (timed device-seconds / (wall x devices)), "
        "median setup 7.0 s"
    )
    assert set(economy["definitions"]) == {"duty_cycle", "duty_cycle_from_launch"}


def test_cpu_ranks_count_the_cpus_they_hold():
    trials = table_from_rows("trials", [trial(0, 10, 5.0, 1.0, device="cpu", cpus_per_worker=2.0)])
    assert sweep_economy(trials, devices=4)["duty_cycle"] == pytest.approx(5 * 2 / (10 * 4))


def test_no_finished_trials_has_no_economy():
    assert sweep_economy(TRIALS.empty_table(), devices=2)["duty_cycle"] is None


def test_the_summary_shows_what_the_space_varies():
    rows = [trial(0, 1, 1, 1, lr=1e-3, grad_accum_steps=1), trial(1, 2, 1, 1, lr=2e-3, grad_accum_steps=4)]
    assert varied_columns(table_from_rows("trials", rows)) == ["grad_accum_steps", "lr"]
    assert varied_columns(table_from_rows("trials", rows[:1])) == ["num_workers", "micro_batch_per_worker"]
