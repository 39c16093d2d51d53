"""The meter's reports: known answers for throughput, step statistics, data wait and a rank's busy time."""

from __future__ import annotations

import pytest

from trainers.measure.flops import ComputeRate
from trainers.measure.meter import EpochMeasure, TrialMeter


def epoch(n: int, step_ms: list[float], wait_ms: list[float], timed_s: float) -> EpochMeasure:
    return EpochMeasure(
        epoch=n,
        step_ms=step_ms,
        wait_ms=wait_ms,
        data_wait_s=0.5,
        timed_steps=len(step_ms),
        timed_samples=1000,
        timed_s=timed_s,
        warmup_s=0.25,
        epoch_time_s=timed_s + 0.25,
        train_loss=2.0 - n,
        val_loss=None,
        val_accuracy=0.5 + n / 10,
        slowdown_achieved=None,
        energy_j=None,
        comm_kernel_ms=None,
        comm_overlap=None,
    )


@pytest.fixture
def meter() -> TrialMeter:
    m = TrialMeter(num_workers=2, trial_started_at=0.0)
    m.epochs = [epoch(0, [10.0, 30.0], [2.0, 2.0], 4.0), epoch(1, [20.0, 20.0], [4.0, 4.0], 6.0)]
    return m


def test_trial_report_known_answers(meter):
    r = meter.trial_report(
        samples_per_epoch=512,
        optimizer_steps=8,
        allreduce_probe_ms=1.5,
        compute=ComputeRate(None, None),
        retries=1,
        worker_group="s-workers-1",
    )
    assert r.throughput == pytest.approx(2000 / 10.0)  # timed samples over timed seconds, all epochs
    assert r.throughput_per_worker == pytest.approx(100.0)
    assert r.step_time_ms == pytest.approx(20.0)
    assert r.data_wait_fraction == pytest.approx(1.0 / 10.0)
    assert r.train_time_s == pytest.approx(10.5) and r.warmup_s == pytest.approx(0.5)
    assert (r.timed_samples, r.timed_s) == (2000, pytest.approx(10.0))
    assert (r.final_loss, r.val_accuracy, r.retries, r.allreduce_probe_ms) == (1.0, 0.6, 1, 1.5)
    assert r.worker_group == "s-workers-1"


def test_rank_report_busy_is_step_minus_wait(meter):
    r = meter.rank_report(rank=1, node="n", device_name="cpu", peak_mem_gib=1.0)
    assert r.step_time_ms == pytest.approx(20.0) and r.wait_ms == pytest.approx(3.0)
    assert r.busy_ms == pytest.approx(17.0)


def test_epoch_report_of_an_epoch(meter):
    r = meter.epoch_report(meter.epochs[1])
    assert r.throughput == pytest.approx(1000 / 6.0)
    assert r.step_time_ms == pytest.approx(20.0) and r.data_wait_fraction == pytest.approx(0.5 / 6.0)
