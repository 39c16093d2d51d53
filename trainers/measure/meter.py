"""What a rank measured, epoch by epoch, and the typed reports (raysweep/core/schema.py) it becomes."""

from __future__ import annotations

import json
import statistics
import time
from dataclasses import dataclass, field

from raysweep.core.schema import EpochReport, RankReport, TrialReport
from trainers.measure.flops import ComputeRate
from trainers.measure.timing import percentile


@dataclass
class EpochMeasure:
    epoch: int
    step_ms: list[float]  # timed optimizer steps (warm-up excluded)
    wait_ms: list[float] | None  # time each timed step waited for the other ranks; None without the barrier
    data_wait_s: float  # host time spent producing timed batches
    timed_steps: int  # optimizer steps in the timing
    timed_samples: int  # global samples in the timed steps
    timed_s: float  # synchronised wall time of the timed steps
    warmup_s: float  # wall time of this epoch's warm-up steps (compilation, autotuning)
    epoch_time_s: float  # the whole training part of the epoch, warm-up included
    train_loss: float
    val_loss: float | None
    val_accuracy: float | None
    slowdown_achieved: float | None  # this rank's busy step time over its calibrated one (trainers.measure.straggler)
    energy_j: float | None  # this rank's GPU energy over the timed steps (trainers.measure.energy)
    comm_kernel_ms: float | None  # collective time per step in the profiled window (trainers.measure.comm_profile)
    comm_overlap: float | None  # share of it under compute


@dataclass
class TrialMeter:
    """Accumulates epochs; ``trial_report`` is the summary the ``trials`` table stores."""

    num_workers: int
    trial_started_at: float  # wall clock (time.time) when the trial's driver started
    first_step_at: float | None = None
    epochs: list[EpochMeasure] = field(default_factory=list)
    phases: dict[str, float] = field(default_factory=dict)

    def mark(self, phase: str) -> None:
        """When a setup phase ended, in seconds since the trial started: where the setup time goes."""
        self.phases[phase] = time.time() - self.trial_started_at

    def mark_first_step(self) -> None:
        if self.first_step_at is None:
            self.first_step_at = time.time()
            self.mark("first_step")

    @property
    def step_ms(self) -> list[float]:
        return [t for e in self.epochs for t in e.step_ms]

    @property
    def timed_s(self) -> float:
        return sum(e.timed_s for e in self.epochs)

    @property
    def timed_samples(self) -> int:
        return sum(e.timed_samples for e in self.epochs)

    @property
    def throughput(self) -> float:
        return self.timed_samples / self.timed_s if self.timed_s > 0 else float("nan")

    @property
    def energy_j(self) -> float | None:
        """This rank's energy over all timed steps; None where any epoch has no counter."""
        energies = [e.energy_j for e in self.epochs]
        return None if not energies or None in energies else sum(energies)

    def epoch_report(self, e: EpochMeasure) -> EpochReport:
        return EpochReport(
            epoch=e.epoch,
            train_loss=e.train_loss,
            val_loss=e.val_loss,
            val_accuracy=e.val_accuracy,
            epoch_time_s=e.epoch_time_s,
            elapsed_s=time.time() - self.trial_started_at,
            # training seconds from the first step to this epoch's end: validation and checkpoints left out
            train_elapsed_s=sum(o.epoch_time_s for o in self.epochs if o.epoch <= e.epoch),
            throughput=e.timed_samples / e.timed_s if e.timed_s > 0 else None,
            step_time_ms=statistics.fmean(e.step_ms) if e.step_ms else None,
            data_wait_fraction=e.data_wait_s / e.timed_s if e.timed_s > 0 else None,
        )

    def rank_report(self, rank: int, node: str, device_name: str, peak_mem_gib: float) -> RankReport:
        steps = self.step_ms
        waits = [w for e in self.epochs for w in e.wait_ms or []]
        step = statistics.fmean(steps) if steps else None
        wait = statistics.fmean(waits) if waits else None  # None: the pre-sync barrier did not run
        slowdowns = [e.slowdown_achieved for e in self.epochs if e.slowdown_achieved is not None]
        return RankReport(
            rank=rank,
            node=node,
            device_name=device_name,
            step_time_ms=step,
            busy_ms=None if step is None or wait is None else step - wait,
            wait_ms=wait,
            peak_mem_gib=peak_mem_gib,
            slowdown_achieved=statistics.fmean(slowdowns) if slowdowns else None,
            energy_j=self.energy_j,
        )

    def trial_report(
        self,
        samples_per_epoch: int,
        optimizer_steps: int,
        allreduce_probe_ms: float | None,
        compute: ComputeRate,
        retries: int,
        worker_group: str,
    ) -> TrialReport:
        steps = self.step_ms
        last = self.epochs[-1]
        data_wait = sum(e.data_wait_s for e in self.epochs)
        return TrialReport(
            samples_per_epoch=samples_per_epoch,
            optimizer_steps=optimizer_steps,
            timed_steps=sum(e.timed_steps for e in self.epochs),
            timed_s=self.timed_s,
            timed_samples=self.timed_samples,
            train_time_s=sum(e.epoch_time_s for e in self.epochs),
            warmup_s=sum(e.warmup_s for e in self.epochs),
            setup_breakdown=json.dumps({k: round(v, 3) for k, v in self.phases.items()}),
            throughput=self.throughput,
            throughput_per_worker=self.throughput / self.num_workers,
            step_time_ms=statistics.fmean(steps) if steps else float("nan"),
            step_time_p95_ms=percentile(steps, 95),
            data_wait_fraction=data_wait / self.timed_s if self.timed_s > 0 else None,
            allreduce_probe_ms=allreduce_probe_ms,
            comm_kernel_ms=last.comm_kernel_ms,  # the profiled window runs in the last epoch
            comm_overlap=last.comm_overlap,
            **compute.columns(self.throughput, self.num_workers),
            final_loss=last.train_loss,
            val_accuracy=last.val_accuracy,
            retries=retries,
            worker_group=worker_group,
            # A span on the worker's clock alone: the recorder subtracts it on its own clock (setup_s).
            since_first_step_s=time.time() - self.first_step_at if self.first_step_at else None,
        )
