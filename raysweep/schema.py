"""The results schema, derived from the typed definitions: ``TrialParams`` and ``raysweep/reports.py``.

A sweep directory holds three tables, one Parquet file per trial in each:

* ``trials/``: one row per trial, what it ran and what it measured;
* ``epochs/``: one row per trial and epoch;
* ``ranks/``: one row per trial and rank, for stragglers and heterogeneous hardware.

and with ``--find-max-batch`` a fourth, written once by the sweep's process:

* ``max_batch/max_batch.parquet``: one row per configuration, its largest micro batch that fits.
"""

from __future__ import annotations

import dataclasses
import types
import typing
from datetime import datetime
from typing import Any

import pyarrow as pa

from raysweep.params import TrialParams
from raysweep.reports import EpochReport, RankReport, TrialRecord, TrialReport, columns_of

ARROW_TYPES = {
    "int32": pa.int32(),
    "int64": pa.int64(),
    "float64": pa.float64(),
    "string": pa.string(),
    "bool": pa.bool_(),
}
# Python field types to Arrow: report counts are int64; trial parameters (small integers) int32.
INT64 = pa.int64()
PYTHON_TYPES = {int: INT64, float: pa.float64(), str: pa.string(), bool: pa.bool_()}
TIMESTAMP = pa.timestamp("ms", tz="UTC")
KEYS = [pa.field("sweep", pa.string()), pa.field("trial_id", pa.string())]


def arrow_type(hint: Any, override: str = "", int_type: pa.DataType = INT64) -> pa.DataType:
    """The Arrow type of a dataclass field's type (``X | None`` is X, nullable)."""
    if override:
        return ARROW_TYPES[override]
    args = [a for a in typing.get_args(hint) if a is not type(None)]
    if isinstance(hint, types.UnionType) or typing.get_origin(hint) is typing.Union:
        (hint,) = args
        args = list(typing.get_args(hint))
    if typing.get_origin(hint) is list:
        return pa.list_(arrow_type(args[0]))
    if hint is datetime:
        return TIMESTAMP
    if hint is int:
        return int_type
    return PYTHON_TYPES[hint]


def report_fields(cls: type) -> list[pa.Field]:
    hints = typing.get_type_hints(cls)
    return [pa.field(f.name, arrow_type(hints[f.name], f.metadata.get("arrow", ""))) for f in columns_of(cls)]


def params_fields() -> list[pa.Field]:
    """Every trial parameter is a configuration column, typed from its dataclass field."""
    hints = typing.get_type_hints(TrialParams)
    return [pa.field(f.name, arrow_type(hints[f.name], int_type=pa.int32())) for f in dataclasses.fields(TrialParams)]


def params_row(params: TrialParams) -> dict[str, Any]:
    """The trial's configuration columns, with the derived values that the trial really ran."""
    return {
        **params.to_dict(),
        "micro_batch_per_worker": params.effective_micro_batch,
        "global_batch": params.train_batch_size,
        "lr": params.learning_rate,
        "amp": params.amp_mode,
        "slow_factor": params.slow_factor if params.slow_ranks else 0.0,
    }


def unique(fields: list[pa.Field]) -> pa.Schema:
    """A schema of the fields, the first of each name kept (a report may repeat a configuration name)."""
    seen: dict[str, pa.Field] = {}
    for f in fields:
        seen.setdefault(f.name, f)
    return pa.schema(list(seen.values()))


TRIALS = unique(
    KEYS
    + report_fields(TrialRecord)[:2]
    + params_fields()
    + report_fields(TrialRecord)[2:]
    + report_fields(TrialReport)
)
EPOCHS = unique(KEYS + report_fields(EpochReport))
RANKS = unique(KEYS + report_fields(RankReport))

# Not a report of a trial but the search's verdict per configuration: its columns are listed here, with their docs.
MAX_BATCH_COLUMNS: list[tuple[str, pa.DataType, str]] = [
    ("sweep", pa.string(), "the sweep's name"),
    ("configuration", pa.string(), "JSON of the trial parameters less `micro_batch_per_worker`"),
    ("max_micro_batch", pa.int32(), "largest micro batch per worker that fitted; NULL: not even the smallest probed"),
    ("first_oom_micro_batch", pa.int32(), "smallest probed micro batch that ran out of memory; NULL if none did"),
    ("peak_mem_gib", pa.float64(), "peak memory of the `max_micro_batch` probe's busiest rank"),
    ("throughput", pa.float64(), "samples/s of the `max_micro_batch` probe (a few timed steps)"),
    ("probes", pa.int32(), "probe trials run for this configuration"),
    ("probed_micro_batches", pa.list_(pa.int32()), "the micro batches probed, in order"),
    ("probe_statuses", pa.list_(pa.string()), "completed, oom or failed, one per probed micro batch"),
    ("error", pa.string(), "a probe's failure other than out of memory, which ended this configuration's search"),
]
MAX_BATCH = pa.schema([(name, arrow) for name, arrow, _ in MAX_BATCH_COLUMNS])

TABLES: dict[str, pa.Schema] = {"trials": TRIALS, "epochs": EPOCHS, "ranks": RANKS, "max_batch": MAX_BATCH}
KEY_DOCS = {"sweep": "the sweep's name", "trial_id": "Tune's trial id"}
TABLE_SOURCES = {"trials": (TrialRecord, TrialReport), "epochs": (EpochReport,), "ranks": (RankReport,)}


def column_docs(table: str) -> dict[str, str]:
    """Each measured column's meaning, from its report field (configuration columns are the trial parameters)."""
    if table == "max_batch":
        return {name: doc for name, _, doc in MAX_BATCH_COLUMNS}
    docs = dict(KEY_DOCS)
    for cls in TABLE_SOURCES[table]:
        docs.update({f.name: f.metadata["doc"] for f in columns_of(cls)})
    return docs


def schema_markdown(table: str) -> str:
    """The README's table of ``table``'s columns: name, Arrow type, meaning (trial parameters in one row)."""
    params = {f.name for f in dataclasses.fields(TrialParams)}
    docs = column_docs(table)
    lines = ["| column | type | meaning |", "|---|---|---|"]
    for f in TABLES[table]:
        if f.name in docs:
            lines.append(f"| `{f.name}` | {f.type} | {docs[f.name]} |")
        elif f.name in params and f.name == next(n for n in TABLES[table].names if n in params):
            lines.append(
                "| every trial parameter | | its value (see Trial parameters); `micro_batch_per_worker`, "
                "`global_batch`, `lr`, `amp` as the trial resolved them |"
            )
    return "\n".join(lines)


def table_from_rows(name: str, rows: list[dict[str, Any]]) -> pa.Table:
    """Rows (dicts) to a table of the named schema; missing columns become nulls, extra keys are an error."""
    schema = TABLES[name]
    extra = {key for row in rows for key in row} - set(schema.names)
    if extra:
        raise ValueError(f"columns not in the {name} schema: {sorted(extra)}")
    return pa.Table.from_pylist([{col: row.get(col) for col in schema.names} for row in rows], schema=schema)
