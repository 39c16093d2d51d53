"""Known answers of the rows a rank reports: timed totals, time to accuracy, busy time and energy."""

import pytest

from trainers.flops import ComputeRate
from trainers.meter import EpochMeasure, TrialMeter


def epoch(number: int, **changes) -> EpochMeasure:
    values = dict(
        epoch=number,
        step_ms=[100.0, 120.0],
        wait_ms=None,
        data_wait_s=0.0,
        timed_steps=2,
        timed_samples=64,
        timed_s=0.25,
        warmup_s=1.0,
        epoch_time_s=1.5,
        train_loss=1.0,
        val_loss=1.0,
        val_accuracy=0.5,
        slowdown_achieved=1.0,
        energy_j=None,
        comm_kernel_ms=None,
        comm_overlap=None,
    )
    return EpochMeasure(**(values | changes))


def test_timed_totals_over_all_epochs_and_mfu():
    meter = TrialMeter(num_workers=2, trial_started_at=0.0)
    meter.epochs = [epoch(0, timed_steps=1, timed_samples=32, timed_s=0.2), epoch(1, warmup_s=0.0)]
    row = meter.trial_row(1000, 10, allreduce_probe_ms=3.0, compute=ComputeRate(1e9, 1e12))
    assert (row["timed_steps"], row["timed_samples"]) == (3, 96)
    assert row["timed_s"] == pytest.approx(0.45)
    assert row["throughput"] == pytest.approx(96 / 0.45)
    assert row["warmup_s"] == 1.0
    assert row["mfu"] == pytest.approx(96 / 0.45 * 1e9 / (2 * 1e12))
    assert row["allreduce_probe_ms"] == 3.0 and "comm_fraction" not in row
    assert row["comm_kernel_ms"] is None


def test_profiled_communication_comes_from_the_last_epoch():
    meter = TrialMeter(num_workers=2, trial_started_at=0.0)
    meter.epochs = [epoch(0), epoch(1, comm_kernel_ms=4.0, comm_overlap=0.25)]
    row = meter.trial_row(1000, 10, allreduce_probe_ms=3.0, compute=ComputeRate(None, None))
    assert (row["comm_kernel_ms"], row["comm_overlap"]) == (4.0, 0.25)


def test_train_elapsed_sums_training_time_up_to_the_epoch():
    meter = TrialMeter(num_workers=1, trial_started_at=0.0)
    meter.epochs = [epoch(0, epoch_time_s=2.0), epoch(1, epoch_time_s=1.5), epoch(2, epoch_time_s=1.0)]
    assert [meter.epoch_row(e)["train_elapsed_s"] for e in meter.epochs] == [2.0, 3.5, 4.5]


def test_busy_and_wait_are_null_without_the_barrier():
    meter = TrialMeter(num_workers=2, trial_started_at=0.0)
    meter.epochs = [epoch(0)]
    row = meter.rank_row(0, "n", "cpu", 1.0)
    assert row["step_time_ms"] == 110.0 and row["busy_ms"] is None and row["wait_ms"] is None


def test_busy_is_step_less_wait_and_energy_sums_over_epochs():
    meter = TrialMeter(num_workers=2, trial_started_at=0.0)
    meter.epochs = [
        epoch(0, wait_ms=[10.0, 30.0], slowdown_achieved=1.3, energy_j=5.0),
        epoch(1, wait_ms=[20.0, 20.0], slowdown_achieved=1.25, energy_j=7.0),
    ]
    row = meter.rank_row(1, "n", "gpu", 1.0)
    assert (row["busy_ms"], row["wait_ms"]) == (90.0, 20.0)
    assert row["slowdown_achieved"] == pytest.approx(1.275)
    assert row["energy_j"] == 12.0
