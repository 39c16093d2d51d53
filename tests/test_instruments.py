"""The instruments around ``train_epoch``'s steps, driven by the real loop on a CPU: which steps and
batches are timed (warm-up and the profiled window left out), the energy over the timed window, the
mean loss, a warm-up-only epoch, and a fault fired at its global step."""

from __future__ import annotations

import itertools
import math
import time

import pytest
import torch

from raysweep.core.params import TrialParams
from trainers.epoch_plan import EpochPlan
from trainers.faults import FaultInjector
from trainers.instruments import Instruments
from trainers.measure.energy import EnergyWindow
from trainers.measure.memory_budget import MemoryBudget
from trainers.measure.meter import TrialMeter
from trainers.measure.straggler import Straggler
from trainers.train_loop import train_epoch

CPU = torch.device("cpu")
CLASSES = 3
WARMUP_WAIT_S = 0.05  # each warm-up micro batch's wait for its data
TIMED_WAIT_S = 0.005  # each timed one's


class ConstantEngine:
    """Zero logits whatever the input, so every micro batch's loss is ln(CLASSES); steps change nothing."""

    def __init__(self):
        self.module = torch.nn.Linear(4, CLASSES)
        torch.nn.init.zeros_(self.module.weight)
        torch.nn.init.zeros_(self.module.bias)
        self.micro_steps = 0

    def __call__(self, x: torch.Tensor) -> torch.Tensor:
        return self.module(x)

    def backward(self, loss: torch.Tensor) -> None:
        loss.backward()

    def step(self) -> None:
        self.module.zero_grad(set_to_none=True)
        self.micro_steps += 1

    def train(self) -> None:
        self.module.train()


class SlowBatches:
    """Micro batches whose data takes WARMUP_WAIT_S for the first ``warmup_batches``, TIMED_WAIT_S after."""

    def __init__(self, warmup_batches: int):
        self.warmup_batches = warmup_batches

    def train(self, epoch: int, micro_batch: int, count: int):
        for i in range(count):
            time.sleep(WARMUP_WAIT_S if epoch == 0 and i < self.warmup_batches else TIMED_WAIT_S)
            yield torch.ones(micro_batch, 4), torch.zeros(micro_batch, dtype=torch.long)


def trial(tmp_path, **values) -> tuple[TrialParams, EpochPlan, Instruments, TrialMeter]:
    params = TrialParams(
        **({"micro_batch_per_worker": 2, "grad_accum_steps": 2, "train_samples": 16, "epochs": 2} | values)
    )
    plan = EpochPlan.of(params, data=None, start_epoch=0)  # train_samples > 0: no data is read
    meter = TrialMeter(params.num_workers, trial_started_at=time.time())
    millijoules = itertools.count(0, 500)  # each read of the counter is 0.5 J on
    instruments = Instruments(
        plan,
        meter,
        Straggler.of(params, rank=0, world=1, device=CPU),
        FaultInjector(params.inject_fault, 0, str(tmp_path)),
        MemoryBudget(params, CPU),
        EnergyWindow(lambda: next(millijoules)),
        CPU,
    )
    return params, plan, instruments, meter


def test_warm_up_steps_and_their_batches_are_left_out_of_the_timing(tmp_path):
    params, plan, instruments, meter = trial(tmp_path, warmup_steps=2)  # 4 steps of 2 micro batches per epoch
    assert plan.steps_per_epoch == 4
    engine, batches = ConstantEngine(), SlowBatches(warmup_batches=2 * 2)
    first, second = (train_epoch(engine, batches, plan, epoch, instruments) for epoch in range(2))

    assert (first.timed_steps, len(first.step_ms), first.timed_samples) == (2, 2, 2 * plan.global_batch)
    assert (second.timed_steps, len(second.step_ms), second.timed_samples) == (4, 4, 4 * plan.global_batch)
    # 4 timed micro batches of TIMED_WAIT_S; the 4 warm-up ones (WARMUP_WAIT_S each) would add 0.2 s
    assert 4 * TIMED_WAIT_S <= first.data_wait_s < 4 * WARMUP_WAIT_S
    assert first.warmup_s >= 4 * WARMUP_WAIT_S and second.warmup_s < 4 * WARMUP_WAIT_S
    assert first.epoch_time_s >= first.warmup_s + first.timed_s
    assert first.energy_j == second.energy_j == 0.5  # one read at the timing's start, one at its end
    assert first.train_loss == pytest.approx(math.log(CLASSES))
    assert first.wait_ms is None and first.slowdown_achieved == 1.0  # one rank, not slowed: no barrier
    assert (first.comm_kernel_ms, first.comm_overlap) == (None, None)
    assert meter.first_step_at is not None and "first_step" in meter.phases
    assert engine.micro_steps == 2 * plan.steps_per_epoch * plan.accum


def test_an_epoch_of_warm_up_only_times_nothing(tmp_path):
    params, plan, instruments, _ = trial(tmp_path, warmup_steps=4, epochs=2)
    measure = train_epoch(ConstantEngine(), SlowBatches(warmup_batches=0), plan, 0, instruments)
    assert (measure.timed_steps, measure.step_ms, measure.timed_s, measure.energy_j) == (0, [], 0.0, None)
    assert measure.warmup_s == measure.epoch_time_s


def test_the_profiled_window_takes_the_last_steps_of_the_last_epoch_out_of_the_timing(tmp_path):
    # 2 ranks in the plan (the profiler runs only where there are collectives), 8 steps, 1 of warm-up
    params, plan, instruments, _ = trial(
        tmp_path, num_workers=2, profile_steps=2, train_samples=64, epochs=1, warmup_steps=1
    )
    assert (plan.steps_per_epoch, plan.profiled_steps(0)) == (8, 2)
    measure = train_epoch(ConstantEngine(), SlowBatches(warmup_batches=0), plan, 0, instruments)
    assert (measure.timed_steps, len(measure.step_ms)) == (8 - 1 - 2, 8 - 1 - 2)
    assert (measure.comm_kernel_ms, measure.comm_overlap) == (None, None)  # no process group: no collective


def test_a_fault_fires_at_its_global_step(tmp_path):
    params, plan, instruments, _ = trial(tmp_path, inject_fault="raise@0:5")  # epoch 1, its step 1
    engine = ConstantEngine()
    train_epoch(engine, SlowBatches(warmup_batches=0), plan, 0, instruments)
    with pytest.raises(RuntimeError, match="injected fault at step 5"):
        train_epoch(engine, SlowBatches(warmup_batches=0), plan, 1, instruments)
    assert engine.micro_steps == (plan.steps_per_epoch + 1) * plan.accum
