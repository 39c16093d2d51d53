"""The results schema, defined once: every writer and reader of the Parquet tables uses it.

A sweep directory holds three tables, one Parquet file per trial in each:

* ``trials/``: one row per trial, what it ran and what it measured;
* ``epochs/``: one row per trial and epoch;
* ``ranks/``: one row per trial and rank, for stragglers and heterogeneous hardware.
"""

from __future__ import annotations

from typing import Any

import pyarrow as pa

TRIAL_STATUSES = ("completed", "failed", "oom")

TRIALS = pa.schema(
    [
        ("sweep", pa.string()),
        ("trial_id", pa.string()),
        ("status", pa.string()),
        ("error", pa.string()),
        ("model", pa.string()),
        ("dataset", pa.string()),
        ("image_size", pa.int32()),
        ("device", pa.string()),
        ("precision", pa.string()),
        ("amp", pa.string()),
        ("engine", pa.string()),
        ("zero_stage", pa.int32()),
        ("optimizer", pa.string()),
        ("lr", pa.float64()),
        ("compile", pa.bool_()),
        ("num_workers", pa.int32()),
        ("micro_batch_per_worker", pa.int32()),
        ("grad_accum_steps", pa.int32()),
        ("global_batch", pa.int32()),
        ("placement_strategy", pa.string()),
        ("data_scaling", pa.string()),
        ("slow_ranks", pa.string()),
        ("slow_factor", pa.float64()),
        ("num_nodes", pa.int32()),
        ("node_ids", pa.list_(pa.string())),
        ("device_names", pa.list_(pa.string())),
        ("samples_per_epoch", pa.int64()),
        ("epochs", pa.int32()),
        ("optimizer_steps", pa.int64()),
        ("train_time_s", pa.float64()),
        ("trial_wall_s", pa.float64()),
        ("setup_s", pa.float64()),
        ("teardown_s", pa.float64()),
        ("warmup_s", pa.float64()),
        ("setup_breakdown", pa.string()),
        ("timed_steps", pa.int64()),
        ("timed_s", pa.float64()),
        ("timed_samples", pa.int64()),
        ("throughput", pa.float64()),
        ("throughput_per_worker", pa.float64()),
        ("step_time_ms", pa.float64()),
        ("step_time_p95_ms", pa.float64()),
        ("data_wait_fraction", pa.float64()),
        ("allreduce_probe_ms", pa.float64()),
        ("comm_kernel_ms", pa.float64()),
        ("comm_overlap", pa.float64()),
        ("flops_per_sample", pa.float64()),
        ("peak_flops", pa.float64()),
        ("mfu", pa.float64()),
        ("joules_per_sample", pa.float64()),
        ("peak_mem_gib", pa.float64()),
        ("final_loss", pa.float64()),
        ("val_accuracy", pa.float64()),
        ("retries", pa.int32()),
        ("params_json", pa.string()),
        ("started_at", pa.timestamp("ms", tz="UTC")),
        ("finished_at", pa.timestamp("ms", tz="UTC")),
    ]
)

EPOCHS = pa.schema(
    [
        ("sweep", pa.string()),
        ("trial_id", pa.string()),
        ("epoch", pa.int32()),
        ("train_loss", pa.float64()),
        ("val_loss", pa.float64()),
        ("val_accuracy", pa.float64()),
        ("epoch_time_s", pa.float64()),
        ("train_elapsed_s", pa.float64()),
        ("elapsed_s", pa.float64()),
        ("throughput", pa.float64()),
        ("step_time_ms", pa.float64()),
        ("data_wait_fraction", pa.float64()),
    ]
)

RANKS = pa.schema(
    [
        ("sweep", pa.string()),
        ("trial_id", pa.string()),
        ("rank", pa.int32()),
        ("node", pa.string()),
        ("device_name", pa.string()),
        ("step_time_ms", pa.float64()),
        ("busy_ms", pa.float64()),
        ("wait_ms", pa.float64()),
        ("slowdown_achieved", pa.float64()),
        ("energy_j", pa.float64()),
        ("peak_mem_gib", pa.float64()),
    ]
)

TABLES: dict[str, pa.Schema] = {"trials": TRIALS, "epochs": EPOCHS, "ranks": RANKS}

COLUMN_DOCS: dict[str, str] = {
    "status": "completed | failed | oom",
    "throughput": "training samples per second over all ranks, warm-up steps excluded",
    "throughput_per_worker": "throughput / num_workers",
    "step_time_ms": "mean wall time of one optimizer step (all micro batches)",
    "step_time_p95_ms": "95th percentile of the optimizer step time",
    "data_wait_fraction": "share of step time spent waiting for the next batch",
    "timed_steps": "optimizer steps inside the timing, all epochs (warm-up after each start excluded)",
    "timed_s": "seconds of the timed steps",
    "timed_samples": "samples of the timed steps; throughput = timed_samples / timed_s",
    "allreduce_probe_ms": "one all-reduce of the model's gradients, in the dtype the engine reduces, on this group",
    "comm_kernel_ms": "collective kernel time per optimizer step, from a profiled window after the timed steps",
    "comm_overlap": "share of the profiled collective time that overlaps compute",
    "flops_per_sample": "analytic training FLOPs per sample: 3 x forward matmuls, attention included",
    "peak_flops": "dense peak FLOP/s of one rank at the trial's precision (known devices, or peak_tflops)",
    "mfu": "throughput x flops_per_sample / (num_workers x peak_flops)",
    "joules_per_sample": "all ranks' GPU energy over the timed steps per timed sample",
    "train_elapsed_s": "training seconds from the first step to the end of this epoch (no validation, checkpoints)",
    "busy_ms": "step time less the wait at the pre-sync barrier (NULL where the barrier does not run)",
    "slowdown_achieved": "busy step time with the emulated delay over the calibrated one (1.0 unslowed)",
    "energy_j": "this rank's GPU energy over the timed steps (NULL on CPUs)",
    "setup_s": "Tune starting the trial to its first training step",
    "teardown_s": "the trial's last report to its end (worker group shut down)",
    "setup_breakdown": "JSON: seconds from trial start to the end of each setup phase on rank 0",
    "warmup_s": "wall time of the warm-up steps left out of the throughput (torch.compile happens here)",
    "train_time_s": "wall time of the training epochs, validation excluded",
    "trial_wall_s": "trial start to trial end, everything included",
    "peak_mem_gib": "peak device memory (GPU) or peak resident memory (CPU) of the busiest rank",
}


def table_from_rows(name: str, rows: list[dict[str, Any]]) -> pa.Table:
    """Rows (dicts) to a table of the named schema; missing columns become nulls, extra keys are an error."""
    schema = TABLES[name]
    extra = {key for row in rows for key in row} - set(schema.names)
    if extra:
        raise ValueError(f"columns not in the {name} schema: {sorted(extra)}")
    return pa.Table.from_pylist([{col: row.get(col) for col in schema.names} for row in rows], schema=schema)
