"""What a rank measures and injects around its training steps, behind the hooks ``train_epoch`` calls.

The loop is the algorithm (batches, forward, backward, step); ``Instruments`` keeps the rest:

* the step clock (each optimizer step) and the data clock (each micro batch's wait for its data),
  read once per epoch, so no step waits on the device for them;
* the warm-up: the first steps after a worker group starts are untimed, and they size a slow rank's
  delay (``trainers.measure.straggler``); the timed part is one synchronised wall-clock span, with the GPU's
  energy over it (``trainers.measure.energy``);
* the profiled window after the timed steps of the last epoch (``trainers.measure.comm_profile``), so the
  profiler's overhead touches no timed step;
* the test hooks that fail a rank (``trainers.faults``) or hold a CPU rank to a memory budget
  (``trainers.measure.memory_budget``).

The hooks of one epoch, in order: ``on_epoch_start``, then per optimizer step ``on_step_start``, per
micro batch the batch from ``timed_batches`` and ``before_backward``, ``on_step_end``; last
``on_epoch_end``, which gives the epoch's ``EpochMeasure``. The device is synchronised where the loop
always did: at the epoch's start and end, where the timing starts and where it ends.
"""

from __future__ import annotations

from collections.abc import Iterator
from dataclasses import dataclass

import torch
import torch.distributed as dist

from raysweep.core.params import TrialParams
from trainers.epoch_plan import EpochPlan
from trainers.faults import FaultInjector
from trainers.measure.comm_profile import ProfileWindow
from trainers.measure.energy import EnergyWindow, energy_window
from trainers.measure.memory_budget import MemoryBudget
from trainers.measure.meter import EpochMeasure, TrialMeter
from trainers.measure.straggler import Straggler
from trainers.measure.timing import IntervalClock, WallSpan

Batch = tuple[torch.Tensor, torch.Tensor]


@dataclass
class TimedPart:
    """What the timed steps of one epoch measured."""

    seconds: float
    steps: int
    step_ms: list[float]
    wait_ms: list[float] | None
    data_wait_s: float
    energy_j: float | None


class Instruments:
    """One rank's instruments for a worker group's epochs (made after any restore: the plan's warm-up
    counts from this start). The straggler and the fault injector live across epochs: a slow rank's
    calibration and a fault's one firing span the run; the clocks start again each epoch."""

    def __init__(
        self,
        plan: EpochPlan,
        meter: TrialMeter,
        straggler: Straggler,
        faults: FaultInjector,
        budget: MemoryBudget,
        energy: EnergyWindow,
        device: torch.device,
    ):
        self.plan = plan
        self.meter = meter
        self.straggler = straggler
        self.faults = faults
        self.budget = budget
        self.energy = energy
        self.device = device

    @classmethod
    def of(
        cls,
        params: TrialParams,
        plan: EpochPlan,
        meter: TrialMeter,
        rank: int,
        world: int,
        device: torch.device,
        fault_marker_dir: str,
    ) -> Instruments:
        straggler = Straggler.of(params, rank, world, device)
        faults = FaultInjector(params.inject_fault, rank, fault_marker_dir)
        return cls(plan, meter, straggler, faults, MemoryBudget(params, device), energy_window(device), device)

    def on_epoch_start(self, epoch: int) -> None:
        self.epoch = epoch
        # The data clock times each batch on the device's stream: the gap covers the batch's own
        # kernels and any stall waiting for the host to produce it. (Host time alone would count
        # the host blocking on a full kernel queue, which is the model's time, not the data's.)
        self.step_clock, self.data_clock = IntervalClock(self.device), IntervalClock(self.device)
        steps = self.plan.steps_per_epoch
        untimed = self.plan.warmup.untimed_steps(epoch)
        self.first_timed_step = untimed if untimed < steps else None  # None: an epoch of warm-up only
        self.profiled = self.plan.profiled_steps(epoch)
        self.first_profiled_step = steps - self.profiled if self.profiled else None
        self.timed: WallSpan | None = None
        self.timed_part: TimedPart | None = None
        self.epoch_span = WallSpan(self.device)
        self.profile = ProfileWindow(self.profiled, self.device.type == "cuda")

    def timed_batches(self, micro_batches: Iterator[Batch]) -> Iterator[Batch]:
        """The epoch's micro batches, each one's wait on the data clock."""
        while True:
            self.data_clock.start()
            batch = next(micro_batches, None)
            self.data_clock.stop()
            if batch is None:
                return
            self.meter.mark_first_step()
            yield batch

    def on_step_start(self, step: int) -> None:
        """Start the timing after the warm-up or the profiler for the last steps; fire a due fault."""
        if step == self.first_timed_step:
            self.on_timed_start()
        if step == self.first_profiled_step:
            self.timed_part = self.end_of_timing(step - self.first_timed_step)
            self.profile.start()
        self.faults.maybe_fire(self.epoch * self.plan.steps_per_epoch + step)
        self.step_clock.start()

    def on_timed_start(self) -> None:
        self.timed = WallSpan(self.device)
        self.data_clock.drain_ms()  # warm-up batches are not counted
        self.straggler.calibrate(self.step_clock.drain_ms())  # the warm-up steps size a slow rank's delay
        self.energy.start()

    def before_backward(self, last_micro_batch: bool) -> None:
        """A slow rank's delay; the pre-sync barrier before the last micro batch's gradient sync."""
        self.straggler.before_backward(last_micro_batch)

    def on_step_end(self) -> None:
        self.step_clock.stop()
        self.budget.check()

    def on_epoch_end(self, loss_sum: torch.Tensor) -> EpochMeasure:
        """The epoch's measures; ``loss_sum`` (of every micro batch's loss) is averaged over all ranks
        after the clocks stop, so its all-reduce is no part of the epoch's time."""
        plan = self.plan
        if self.profiled:
            self.profile.stop()
        elif self.timed is not None:
            self.timed_part = self.end_of_timing(plan.steps_per_epoch - self.first_timed_step)
        else:
            self.straggler.calibrate(self.step_clock.drain_ms())
            self.timed_part = TimedPart(0.0, 0, [], None, 0.0, None)
        part = self.timed_part
        epoch_time_s = self.epoch_span.seconds()
        return EpochMeasure(
            epoch=self.epoch,
            step_ms=part.step_ms,
            wait_ms=part.wait_ms,
            data_wait_s=part.data_wait_s,
            timed_steps=part.steps,
            timed_samples=part.steps * plan.global_batch,
            timed_s=part.seconds,
            warmup_s=self.timed.t0 - self.epoch_span.t0 if self.timed is not None else epoch_time_s,
            epoch_time_s=epoch_time_s,
            train_loss=all_mean(loss_sum / (plan.steps_per_epoch * plan.accum)),
            val_loss=None,
            val_accuracy=None,
            slowdown_achieved=self.straggler.slowdown_achieved(part.step_ms, part.wait_ms),
            energy_j=part.energy_j,
            **self.profile.columns(),
        )

    def end_of_timing(self, steps: int) -> TimedPart:
        seconds = self.timed.seconds()  # synchronises: the energy counter then covers the finished steps
        energy_j = self.energy.stop()
        data_wait_s = sum(self.data_clock.drain_ms()) / 1000.0
        wait_ms = self.straggler.drain_wait_ms()
        return TimedPart(seconds, steps, self.step_clock.drain_ms(), wait_ms, data_wait_s, energy_j)


def all_mean(value: torch.Tensor) -> float:
    """The mean of ``value`` over all ranks (synchronises the device)."""
    if dist.is_initialized():
        value = value.clone()
        dist.all_reduce(value)
        value /= dist.get_world_size()
    return float(value)
