"""The results schema: the typed reports a trial's workers send, and the tables derived from them.

What a trial measures is typed records: their fields and docs are the measured columns of the tables.
A worker fills ``EpochReport``, ``RankReport`` and ``TrialReport`` and sends ``dataclasses.asdict`` of
them through ``ray.train.report`` under ``REPORT_KEYS``; the recorder rebuilds them with ``from_metrics``
(one definition on both sides). ``TrialRecord`` holds what the recorder itself adds to a ``trials`` row.
Adding a measured column is one field here, with its doc; the tables below derive the rest, with the
configuration columns from ``TrialParams``. Columns the contract names that no code fills yet default
to None (NULL).

A sweep directory holds three tables, one Parquet file per trial in each:

* ``trials/``: one row per trial, what it ran and what it measured;
* ``epochs/``: one row per trial and epoch;
* ``ranks/``: one row per trial and rank, for stragglers and heterogeneous hardware.

and with ``--find-max-batch`` a fourth, written once by the sweep's process:

* ``max_batch/max_batch.parquet``: one row per configuration, its largest micro batch that fits.

and with ``--probe-links`` (or ``python -m raysweep.probe``) a fifth:

* ``links/links.parquet``: the link probe's timed collectives and the latency and bandwidth fitted to them.
"""

from __future__ import annotations

import dataclasses
import types
import typing
from dataclasses import dataclass, field
from datetime import datetime
from typing import Any, TypeVar

import pyarrow as pa

from raysweep.core.errors import UsageError
from raysweep.core.params import TrialParams

# The keys of the metrics dict that carry the reports from a worker to the recorder.
EPOCH_KEY, TRIAL_KEY, RANKS_KEY = "epoch_report", "trial_report", "rank_reports"
REPORT_KEYS = (EPOCH_KEY, TRIAL_KEY, RANKS_KEY)
# Which trial a report belongs to: a shared worker group's reports reach its trials' drivers by it.
TRIAL_ID_KEY = "reporting_trial"
# The scalars each epoch's report carries at its top level (trainers.train_loop.report): what a Tune
# scheduler or searcher can optimise (a space's ``metric``).
REPORTED_METRICS = ("val_accuracy", "train_loss", "throughput")


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
    compiled: bool | None = column("whether the trial ran torch.compile'd (compile=true, or auto's choice)")
    compile_reason: str | None = column(
        "why it compiled or not: compile=true/false as set, or auto's figures (planned steps, the saving "
        "against the compile's cost, measured or default) and mode"
    )
    setup_breakdown: str | None = column(
        "JSON: seconds from the trial's start to the end of each setup phase on rank 0 (driver started, worker "
        "started, data loaded, model built, engine ready, first step)"
    )
    throughput: float | None = column("training samples/s over all ranks: timed_samples / timed_s")
    throughput_per_worker: float | None = column("throughput / num_workers")
    step_time_ms: float | None = column("mean wall time of one optimizer step (all micro batches)")
    step_time_p95_ms: float | None = column("95th percentile of the optimizer step time")
    data_wait_fraction: float | None = column("share of step time spent waiting for the next batch")
    allreduce_probe_ms: float | None = column(
        "one all-reduce of the gradients, each in the dtype the engine reduces it in "
        "(bf16 for Linear/Conv under autocast with ZeRO 1-3)"
    )
    trainable_params: int | None = column("parameters with gradients: the elements a step's collectives carry")
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
    skipped_files: int | None = column(
        "with skip_bad_files: the distinct files the trial's ranks could not read and skipped; NULL without it",
        arrow="int32",
    )
    worker_group: str | None = column(
        "the Ray Train run whose worker processes ran the trial: trials with one value shared processes"
    )
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
    run_order: int | None = column(
        "the trial's place in the sweep's planned order (with repeats, each round's points in a seeded random order)",
        arrow="int32",
    )
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


def list_of(item: pa.DataType) -> pa.DataType:
    """A list type whose items are named "element", as Parquet names them (Arrow's default is "item"), so the
    type read back from a file prints as the schema, and docs/results.md, generated from it, print it."""
    return pa.list_(pa.field("element", item))


def arrow_type(hint: Any, override: str = "", int_type: pa.DataType = INT64) -> pa.DataType:
    """The Arrow type of a dataclass field's type (``X | None`` is X, nullable)."""
    if override:
        return ARROW_TYPES[override]
    args = [a for a in typing.get_args(hint) if a is not type(None)]
    if isinstance(hint, types.UnionType) or typing.get_origin(hint) is typing.Union:
        (hint,) = args
        args = list(typing.get_args(hint))
    if typing.get_origin(hint) is list:
        return list_of(arrow_type(args[0]))
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

# What the experiment trackers (TensorBoard, MLflow) log, each figure under its column name: per epoch (the
# epoch as the step) the ``epochs`` row's figures, and at the trial's end the ``trials`` row's numeric
# columns the epochs table lacks (``peak_mem_gib``, ``setup_s``, ``mfu`` ...): a name the epochs table
# has (``throughput``, ``val_accuracy``) keeps its per-epoch history.
TRACKED_EPOCH_COLUMNS = tuple(name for name in EPOCHS.names if name not in ("sweep", "trial_id", "epoch"))
TRACKED_TRIAL_COLUMNS = tuple(
    f.name
    for f in [*report_fields(TrialRecord), *report_fields(TrialReport)]
    if (pa.types.is_integer(f.type) or pa.types.is_floating(f.type)) and f.name not in TRACKED_EPOCH_COLUMNS
)

# Not a report of a trial but the search's verdict per configuration: its columns are listed here, with their docs.
MAX_BATCH_COLUMNS: list[tuple[str, pa.DataType, str]] = [
    ("sweep", pa.string(), "the sweep's name"),
    ("configuration", pa.string(), "JSON of the trial parameters less `micro_batch_per_worker`"),
    ("max_micro_batch", pa.int32(), "largest micro batch per worker that fitted; NULL: not even the smallest probed"),
    ("first_oom_micro_batch", pa.int32(), "smallest probed micro batch that ran out of memory; NULL if none did"),
    ("peak_mem_gib", pa.float64(), "peak memory of the `max_micro_batch` probe's busiest rank"),
    ("throughput", pa.float64(), "samples/s of the `max_micro_batch` probe (a few timed steps)"),
    ("probes", pa.int32(), "probe trials run for this configuration"),
    ("probed_micro_batches", list_of(pa.int32()), "the micro batches probed, in order"),
    ("probe_statuses", list_of(pa.string()), "completed, oom or failed, one per probed micro batch"),
    ("error", pa.string(), "a probe's failure other than out of memory, which ended this configuration's search"),
]
MAX_BATCH = pa.schema([(name, arrow) for name, arrow, _ in MAX_BATCH_COLUMNS])

# The link probe's table: a row per timed point (``row`` = point) and per fit (``row`` = fit) of a link class and
# collective; analysis.prediction.link_model reads the fits and writes the fit rows from the points.
LINKS_COLUMNS: list[tuple[str, pa.DataType, str]] = [
    ("sweep", pa.string(), "the sweep's name (or the probe's)"),
    (
        "row",
        pa.string(),
        "point (one timed collective size), fit (latency and bandwidth of a link class) or coupled (the trial's"
        " bucketed all-reduce timed while the ranks compute, `trainers.coupled_probe`)",
    ),
    ("link_class", pa.string(), "intra_node (all ranks on one node) or inter_node (one rank per node)"),
    ("collective", pa.string(), "all_reduce, reduce_scatter, all_gather or all_to_all"),
    ("backend", pa.string(), "the torch.distributed backend (nccl, gloo)"),
    ("ranks", pa.int32(), "ranks in the collective (fit: the most of its points)"),
    ("nodes", pa.int32(), "nodes the ranks ran on"),
    ("bytes", pa.int64(), "point: the buffer's size (reduce-scatter input, all-gather output)"),
    (
        "time_s",
        pa.float64(),
        "point: median seconds of one collective over the repeats, the slowest rank's; coupled: of one step of the"
        " load with the buckets' all-reduce",
    ),
    ("time_min_s", pa.float64(), "point: fastest repeat"),
    ("time_max_s", pa.float64(), "point: slowest repeat"),
    ("repeats", pa.int32(), "point: timed repeats after the warm-up; fit: points fitted"),
    ("alpha_s", pa.float64(), "fit: latency of one ring step, seconds"),
    ("beta_bytes_per_s", pa.float64(), "fit: bandwidth of one link, bytes per second"),
    ("fit_error", pa.float64(), "fit: median relative error of the fit over its points"),
    ("buckets", pa.int32(), "coupled: the gradient buckets `bytes` is all-reduced in"),
    ("load", pa.string(), "coupled: the compute load, the trial's model and micro batch"),
    ("compute_s", pa.float64(), "coupled: median seconds of one step of the load, one rank alone"),
    ("idle_s", pa.float64(), "coupled: median seconds of the buckets' all-reduce on idle ranks"),
]
LINKS = pa.schema([(name, arrow) for name, arrow, _ in LINKS_COLUMNS])

TABLES: dict[str, pa.Schema] = {
    "trials": TRIALS,
    "epochs": EPOCHS,
    "ranks": RANKS,
    "max_batch": MAX_BATCH,
    "links": LINKS,
}
LISTED_COLUMNS = {"max_batch": MAX_BATCH_COLUMNS, "links": LINKS_COLUMNS}
KEY_DOCS = {"sweep": "the sweep's name", "trial_id": "Tune's trial id"}
TABLE_SOURCES = {"trials": (TrialRecord, TrialReport), "epochs": (EpochReport,), "ranks": (RankReport,)}


def column_docs(table: str) -> dict[str, str]:
    """Each measured column's meaning, from its report field (configuration columns are the trial parameters)."""
    if table in LISTED_COLUMNS:
        return {name: doc for name, _, doc in LISTED_COLUMNS[table]}
    docs = dict(KEY_DOCS)
    for cls in TABLE_SOURCES[table]:
        docs.update({f.name: f.metadata["doc"] for f in columns_of(cls)})
    return docs


def schema_markdown(table: str) -> str:
    """The table in docs/results.md of ``table``'s columns: name, Arrow type, meaning (trial parameters in one row)."""
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


# The layout of the tables and of sweep.json. Raised only by a change that breaks an older reader (a column
# renamed, retyped or given a new meaning): an added column keeps it, since readers fill a column a file lacks
# with nulls and show one they do not know. Files from before versions were recorded read as UNVERSIONED.
SCHEMA_VERSION = 2  # 2: the trials table's `compile` is what was asked (false, true, auto), `compiled` what ran
UNVERSIONED = 0
# Their keys in every Parquet file's metadata and in sweep.json.
RAYSWEEP_VERSION_KEY, SCHEMA_VERSION_KEY = "raysweep_version", "schema_version"


def raysweep_version() -> str:
    """The installed raysweep's version ("unknown" when run from a tree that is not installed)."""
    from importlib.metadata import PackageNotFoundError, version

    try:
        return version("raysweep")
    except PackageNotFoundError:
        return "unknown"


def version_stamp() -> dict[str, Any]:
    """What a writer records beside its rows: the raysweep that wrote them and the schema version."""
    return {RAYSWEEP_VERSION_KEY: raysweep_version(), SCHEMA_VERSION_KEY: SCHEMA_VERSION}


def parquet_stamp() -> dict[bytes, bytes]:
    """``version_stamp`` as Parquet key-value metadata (bytes to bytes)."""
    return {key.encode(): str(value).encode() for key, value in version_stamp().items()}


def stamp_of_parquet(metadata: dict[bytes, bytes] | None) -> dict[str, Any]:
    """A Parquet file's ``version_stamp`` (empty for a file written before versions were recorded)."""
    found = {key: (metadata or {}).get(key.encode()) for key in (RAYSWEEP_VERSION_KEY, SCHEMA_VERSION_KEY)}
    return {key: value.decode() for key, value in found.items() if value is not None}


def check_schema_version(stamp: dict[str, Any], where: str) -> int:
    """The schema version ``stamp`` records (UNVERSIONED without one); refuses one newer than this raysweep reads."""
    recorded = stamp.get(SCHEMA_VERSION_KEY)
    try:
        found = UNVERSIONED if recorded is None else int(recorded)
    except (TypeError, ValueError):
        raise UsageError(f"{where} records schema version {recorded!r}, which is not a number") from None
    if found > SCHEMA_VERSION:
        writer = stamp.get(RAYSWEEP_VERSION_KEY, "unknown")
        raise UsageError(
            f"{where} was written by raysweep {writer} with schema version {found}; this raysweep "
            f"({raysweep_version()}) reads schema versions up to {SCHEMA_VERSION}: read it with raysweep {writer} "
            "or newer"
        )
    return found
