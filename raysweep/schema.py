"""The results schema, defined once: every writer and reader of the Parquet tables uses it.

A sweep directory holds three tables, one Parquet file per trial in each:

* ``trials/``: one row per trial, what it ran and what it measured;
* ``epochs/``: one row per trial and epoch;
* ``ranks/``: one row per trial and rank, for stragglers and heterogeneous hardware.
"""

from __future__ import annotations

from typing import Any

import pyarrow as pa

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
        ("throughput", pa.float64()),
        ("throughput_per_worker", pa.float64()),
        ("step_time_ms", pa.float64()),
        ("step_time_p95_ms", pa.float64()),
        ("data_wait_fraction", pa.float64()),
        ("comm_time_ms", pa.float64()),
        ("comm_fraction", pa.float64()),
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
        ("compute_ms", pa.float64()),
        ("wait_ms", pa.float64()),
        ("peak_mem_gib", pa.float64()),
    ]
)

TABLES: dict[str, pa.Schema] = {"trials": TRIALS, "epochs": EPOCHS, "ranks": RANKS}


def table_from_rows(name: str, rows: list[dict[str, Any]]) -> pa.Table:
    """Rows (dicts) to a table of the named schema; missing columns become nulls, extra keys are an error."""
    schema = TABLES[name]
    extra = {key for row in rows for key in row} - set(schema.names)
    if extra:
        raise ValueError(f"columns not in the {name} schema: {sorted(extra)}")
    return pa.Table.from_pylist([{col: row.get(col) for col in schema.names} for row in rows], schema=schema)
