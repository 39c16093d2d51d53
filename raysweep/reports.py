"""What a trial measures, as typed records: their fields and docs are the measured columns of the tables.

A worker fills ``EpochReport``, ``RankReport`` and ``TrialReport`` and sends ``dataclasses.asdict`` of
them through ``ray.train.report`` under ``REPORT_KEYS``; the recorder rebuilds them with ``from_metrics``
(one definition on both sides). ``TrialRecord`` holds what the recorder itself adds to a ``trials`` row.
Adding a measured column is one field here, with its doc (``raysweep/schema.py`` derives the rest).
Columns the contract names that no code fills yet default to None (NULL).
"""

from __future__ import annotations

import dataclasses
from dataclasses import dataclass, field
from datetime import datetime
from typing import Any, TypeVar

# The keys of the metrics dict that carry the reports from a worker to the recorder.
EPOCH_KEY, TRIAL_KEY, RANKS_KEY = "epoch_report", "trial_report", "rank_reports"
REPORT_KEYS = (EPOCH_KEY, TRIAL_KEY, RANKS_KEY)


def column(doc: str, default: Any = None, arrow: str = "", transport: bool = False) -> Any:
    """A report field: its doc (the column's meaning), an arrow type override, or transport only (no column)."""
    return field(default=default, metadata={"doc": doc, "arrow": arrow, "transport": transport})


@dataclass
class EpochReport:
    epoch: int = column("epoch number, from 0", arrow="int32")
    train_loss: float | None = column("mean training loss of the epoch over all ranks")
    val_loss: float | None = column("held-out loss after the epoch")
    val_accuracy: float | None = column("held-out accuracy after the epoch")
    epoch_time_s: float | None = column("wall time of the epoch's training, warm-up included")
    elapsed_s: float | None = column("seconds since the trial's driver started (worker clock minus driver start)")
    train_elapsed_s: float | None = column(
        "training seconds from the trial's first step to the end of this epoch, validation and checkpoints excluded"
    )
    throughput: float | None = column("training samples/s of the epoch's timed steps")
    step_time_ms: float | None = column("mean optimizer step time of the epoch")
    data_wait_fraction: float | None = column("share of the timed step time spent waiting for batches")


@dataclass
class RankReport:
    rank: int = column("world rank", arrow="int32")
    node: str | None = column("node id the rank ran on")
    device_name: str | None = column("the rank's device (GPU model, or the CPU)")
    step_time_ms: float | None = column("mean optimizer step time on this rank")
    busy_ms: float | None = column("step time minus the wait at the pre-sync barrier; NULL where it does not run")
    wait_ms: float | None = column("time per step waiting for the other ranks before the gradient sync")
    peak_mem_gib: float | None = column("peak device memory (GPU) or resident memory (CPU) of the rank")
    slowdown_achieved: float | None = column("the rank's step-time ratio with its emulated delay over without")
    energy_j: float | None = column("NVML energy of the rank's device over the timed window; NULL on CPUs")


@dataclass
class TrialReport:
    samples_per_epoch: int | None = column("training samples per epoch")
    optimizer_steps: int | None = column("optimizer steps in all epochs")
    timed_steps: int | None = column("optimizer steps inside the timing, all epochs")
    timed_s: float | None = column("seconds of the timed steps")
    timed_samples: int | None = column("global samples of the timed steps")
    train_time_s: float | None = column("wall time of the training epochs, warm-up included, validation excluded")
    warmup_s: float | None = column("wall time of the warm-up steps left out of the throughput (compilation)")
    setup_breakdown: str | None = column(
        "JSON: seconds from the trial's start to the end of each setup phase on rank 0 (driver started, worker "
        "started, data loaded, model built, engine ready, first step)"
    )
    throughput: float | None = column("training samples/s over all ranks: timed_samples / timed_s")
    throughput_per_worker: float | None = column("throughput / num_workers")
    step_time_ms: float | None = column("mean wall time of one optimizer step (all micro batches)")
    step_time_p95_ms: float | None = column("95th percentile of the optimizer step time")
    data_wait_fraction: float | None = column("share of step time spent waiting for the next batch")
    allreduce_probe_ms: float | None = column("one all-reduce of the gradients in the engine's reduce dtype")
    comm_kernel_ms: float | None = column(
        "collective kernel time per optimizer step (profiled window); NULL for one rank"
    )
    comm_overlap: float | None = column(
        "share of the collective time hidden under compute, in [0, 1]; NULL for one rank"
    )
    flops_per_sample: float | None = column("analytic training FLOPs per sample (3 x forward)")
    peak_flops: float | None = column("dense peak FLOP/s per rank used for mfu")
    mfu: float | None = column("throughput x flops_per_sample / (num_workers x peak_flops)")
    joules_per_sample: float | None = column("NVML energy over the timed window per sample; NULL on CPUs")
    final_loss: float | None = column("last epoch's training loss")
    val_accuracy: float | None = column("last epoch's held-out accuracy")
    retries: int = column("worker-group restarts (a killed rank, a failed collective)", default=0, arrow="int32")
    since_first_step_s: float | None = column(
        "worker clock: seconds from the first training step to this report", transport=True
    )


@dataclass
class TrialRecord:
    """What the recorder adds to a trial's row, on the sweep's own clock (the CLI machine's)."""

    status: str = column("completed, failed or oom", default="failed")
    error: str | None = column("the trial's exception, last meaningful line")
    num_nodes: int | None = column("nodes the trial's ranks ran on", arrow="int32")
    node_ids: list[str] | None = column("node id per rank")
    device_names: list[str] | None = column("device per rank")
    peak_mem_gib: float | None = column("peak memory of the busiest rank")
    setup_s: float | None = column(
        "sweep clock: Tune starting the trial to its first training step (first report's arrival minus the "
        "worker-timed span from first step to that report)"
    )
    teardown_s: float | None = column("sweep clock: the trial's last report to its end")
    trial_wall_s: float | None = column("sweep clock: trial start to end, everything included")
    params_json: str | None = column("every trial parameter, as JSON")
    started_at: datetime | None = column("UTC time Tune started the trial")
    finished_at: datetime | None = column("UTC time the trial ended")


R = TypeVar("R")


def columns_of(cls: type) -> list[dataclasses.Field]:
    """The fields of a report that are table columns."""
    return [f for f in dataclasses.fields(cls) if not f.metadata.get("transport")]


def from_metrics(cls: type[R], values: dict[str, Any]) -> R:
    """Rebuild a report from its ``asdict`` (what crossed ``ray.train.report``); unknown keys are an error."""
    return cls(**values)


def row_of(report: Any) -> dict[str, Any]:
    """A report's columns as a row (transport-only fields left out)."""
    return {f.name: getattr(report, f.name) for f in columns_of(type(report))}
