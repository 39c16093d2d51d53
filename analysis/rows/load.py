"""Reading one sweep directory into data frames of measured rows: completed trials, and the trials the sweep's
scheduler stopped early, whose timed epochs count for throughput but whose accuracy is not a final accuracy."""

from __future__ import annotations

import json
from dataclasses import dataclass, field
from pathlib import Path

import pandas as pd
import pyarrow as pa
import pyarrow.parquet as pq

from analysis.rows.errors import AnalysisError
from raysweep.core.errors import UsageError
from raysweep.core.schema import check_schema_version, stamp_of_parquet
from raysweep.core.status import TrialStatus, is_completed
from raysweep.core.store import read_table

REQUIRED_TRIAL_COLUMNS = ("trial_id", "status", "num_workers", "micro_batch_per_worker", "train_time_s", "throughput")
# val_accuracy may be empty throughout (synthetic data has no held-out split): accuracy sections then say so.
REQUIRED_EPOCH_COLUMNS = ("trial_id", "epoch", "elapsed_s")
REQUIRED_RANK_COLUMNS = ("trial_id", "rank", "step_time_ms")
# Columns of this round's tables (and of the tables before it, by their old names) that the analysis reads
# where present: an older or newer table lacking one reads it as null.
OPTIONAL_TRIAL_COLUMNS = (
    "timed_s",
    "timed_samples",
    "timed_steps",
    "warmup_s",
    "comm_kernel_ms",
    "comm_overlap",
    "allreduce_probe_ms",
    "comm_time_ms",
    "comm_fraction",
    "mfu",
    "joules_per_sample",
    "sequence_parallel",
    "tensor_parallel",
    "seed",
    "repeat",
    "params_json",
    "peak_mem_gib",
    "data_wait_fraction",
    "step_time_ms",
    "val_accuracy",
    "final_loss",
    "device_names",
    "samples_per_epoch",
)
OPTIONAL_EPOCH_COLUMNS = ("val_accuracy", "train_elapsed_s", "train_loss")
OPTIONAL_RANK_COLUMNS = ("busy_ms", "compute_ms", "wait_ms", "slowdown_achieved", "peak_mem_gib")
# What a stopped trial's row says of its last epoch, not of a trial run to the end: blank in ``measured``.
FINAL_ONLY_COLUMNS = ("val_accuracy", "final_loss")


@dataclass
class SweepData:
    """Completed trials and their epochs and ranks; ``left_out`` counts the other trials by status;
    ``stopped``: the scheduler-stopped trials' rows (their timed work), for throughput only."""

    sweep_dir: Path
    trials: pd.DataFrame
    epochs: pd.DataFrame
    ranks: pd.DataFrame
    left_out: dict[str, int] = field(default_factory=dict)
    manifest: dict = field(default_factory=dict)  # sweep.json: description, space, economy, ... ({} without one)
    max_batch: pd.DataFrame = field(default_factory=pd.DataFrame)  # <sweep>/max_batch/*.parquet, if any
    stopped_at: dict[int, int] = field(default_factory=dict)  # scheduler-stopped trials by the epochs they reached
    stopped: pd.DataFrame = field(default_factory=pd.DataFrame)

    @property
    def measured(self) -> pd.DataFrame:
        """The trials whose timed epochs count for throughput: the completed ones, and the stopped ones with
        their accuracy and loss blank (an early epoch's, not a final one)."""
        if self.stopped.empty:
            return self.trials
        stopped = self.stopped.assign(**{c: float("nan") for c in FINAL_ONLY_COLUMNS})
        return pd.concat([self.trials, stopped], ignore_index=True)

    @property
    def question(self) -> str:
        return str(self.manifest.get("description") or "")

    @property
    def device_label(self) -> str:
        """The devices the trials ran on, for labelling a sweep beside others."""
        lists = [
            v if isinstance(v, (list, tuple)) or hasattr(v, "tolist") else [v]
            for v in self.trials["device_names"]
            if v is not None and not isinstance(v, float)
        ]
        names = sorted({str(n) for names in lists for n in names if str(n)})
        return ", ".join(names) or ", ".join(sorted({str(d) for d in self.trials["device"].dropna()})) or "?"

    @property
    def name(self) -> str:
        return self.sweep_dir.name


def load_sweep(sweep_dir: str | Path) -> SweepData:
    """Read ``trials``, ``epochs`` and ``ranks`` of one sweep; raise ``AnalysisError`` on unusable input."""
    sweep_dir = Path(sweep_dir)
    if not sweep_dir.is_dir():
        raise AnalysisError(f"sweep directory {sweep_dir} does not exist or is not a directory")
    if not any((sweep_dir / "trials").glob("*.parquet")):
        raise AnalysisError(f"no trial results in {sweep_dir / 'trials'}{suggest_sweeps(sweep_dir)}")
    manifest = read_manifest(sweep_dir)
    try:
        check_schema_version(manifest, str(sweep_dir / "sweep.json"))
    except UsageError as exc:
        raise AnalysisError(str(exc)) from exc
    trials = read(sweep_dir, "trials")
    require_columns(trials, "trials", ("trial_id", "status"), sweep_dir)
    status = trials["status"].fillna("unknown")
    completed = trials[status.map(is_completed)].copy()
    if completed.empty:
        raise AnalysisError(f"no completed trials in {sweep_dir} (statuses: {status.value_counts().to_dict()})")
    require_columns(completed, "trials", REQUIRED_TRIAL_COLUMNS, sweep_dir, among="completed ")
    completed = with_timed_work(with_optional_columns(completed, OPTIONAL_TRIAL_COLUMNS))
    done = set(completed["trial_id"])
    all_epochs = read(sweep_dir, "epochs")
    epochs = with_optional_columns(all_epochs[all_epochs["trial_id"].isin(done)], OPTIONAL_EPOCH_COLUMNS)
    if not epochs.empty:
        require_columns(epochs, "epochs", REQUIRED_EPOCH_COLUMNS, sweep_dir)
    ranks = read(sweep_dir, "ranks")
    ranks = with_optional_columns(ranks[ranks["trial_id"].isin(done)], OPTIONAL_RANK_COLUMNS)
    if not ranks.empty:
        require_columns(ranks, "ranks", REQUIRED_RANK_COLUMNS, sweep_dir)
    left_out = status[~status.map(is_completed)].value_counts().sort_index().to_dict()
    is_stopped = status == TrialStatus.STOPPED.value
    stopped = set(trials.loc[is_stopped, "trial_id"])
    timed_stopped = trials[is_stopped & trials["throughput"].gt(0)] if "throughput" in trials else trials.iloc[:0]
    return SweepData(
        sweep_dir,
        completed.reset_index(drop=True),
        epochs.reset_index(drop=True),
        ranks.reset_index(drop=True),
        {str(k): int(v) for k, v in left_out.items()},
        manifest,
        read_max_batch(sweep_dir),
        epochs_reached(all_epochs, stopped),
        with_timed_work(with_optional_columns(timed_stopped, OPTIONAL_TRIAL_COLUMNS)).reset_index(drop=True),
    )


def epochs_reached(epochs: pd.DataFrame, trial_ids: set[str]) -> dict[int, int]:
    """How many of ``trial_ids`` reached each epoch count (1 = stopped after its first epoch): the scheduler's rungs."""
    if not trial_ids or epochs.empty:
        return {}
    reached = epochs[epochs["trial_id"].isin(trial_ids)].groupby("trial_id")["epoch"].max() + 1
    return {int(k): int(v) for k, v in reached.value_counts().sort_index().items()}


def read_max_batch(sweep_dir: Path) -> pd.DataFrame:
    """The largest-fitting-batch search's table (raysweep.planning.max_batch writes it), empty where there is none."""
    files = sorted((sweep_dir / "max_batch").glob("*.parquet"))
    if not files:
        return pd.DataFrame()
    try:
        tables = [pq.read_table(f) for f in files]
        for file, part in zip(files, tables):
            check_schema_version(stamp_of_parquet(part.schema.metadata), str(file))
        return pd.concat([part.to_pandas() for part in tables], ignore_index=True)
    except (pa.ArrowException, OSError, UsageError) as exc:
        raise AnalysisError(f"cannot read the max_batch table of {sweep_dir}: {exc}") from exc


def read_manifest(sweep_dir: Path) -> dict:
    """sweep.json, or {} where it is missing or unreadable (the tables alone still make a report)."""
    try:
        manifest = json.loads((sweep_dir / "sweep.json").read_text(encoding="utf-8"))
    except (OSError, ValueError):
        return {}
    return manifest if isinstance(manifest, dict) else {}


def with_optional_columns(frame: pd.DataFrame, columns: tuple[str, ...]) -> pd.DataFrame:
    frame = frame.copy()
    for column in columns:
        if column not in frame.columns:
            frame[column] = None if column in ("params_json", "device_names") else float("nan")
    return frame


def with_timed_work(trials: pd.DataFrame) -> pd.DataFrame:
    """Timed seconds and samples of every trial; ``timed_source`` says where they came from.

    Tables from before ``timed_s`` existed hold the timed throughput and the samples trained, so the
    timed seconds are derived as samples / throughput (warm-up steps then count as timed samples).
    """
    trials = trials.copy()
    measured = trials["timed_s"].notna() & trials["timed_samples"].notna()
    samples = trials["samples_per_epoch"] * trials["epochs"]
    trials["timed_samples"] = trials["timed_samples"].where(measured, samples).astype(float)
    trials["timed_s"] = trials["timed_s"].where(measured, trials["timed_samples"] / trials["throughput"]).astype(float)
    trials["timed_source"] = ["timed_s" if m else "samples / throughput" for m in measured]
    # The throughput is the timed rate; recomputing keeps it and the scaling figures one quantity.
    trials["timed_rate"] = trials["timed_samples"] / trials["timed_s"]
    return trials


def read(sweep_dir: Path, table: str) -> pd.DataFrame:
    try:
        frame = read_table(sweep_dir / table, table).to_pandas()
        return with_unnamed_columns(frame, sorted((sweep_dir / table).glob("*.parquet")))
    except (pa.ArrowException, OSError, UsageError) as exc:
        first_line = str(exc).splitlines()[0] if str(exc) else type(exc).__name__
        raise AnalysisError(f"cannot read the {table} table of {sweep_dir}: {first_line}") from exc


def with_unnamed_columns(frame: pd.DataFrame, files: list[Path]) -> pd.DataFrame:
    """Add the columns of ``files`` that the vocabulary's schema does not name (yet): a table written by a newer
    worker than this checkout still shows its new figures. read_table keeps the files' order, so rows align."""
    parts = []
    for file in files:
        names = [c for c in pq.read_schema(file).names if c not in frame.columns]
        parts.append(
            pq.read_table(file, columns=names).to_pandas()
            if names
            else pd.DataFrame(index=range(pq.read_metadata(file).num_rows))
        )
    if not parts or not any(len(p.columns) for p in parts):
        return frame
    extra = pd.concat(parts, ignore_index=True)
    return pd.concat([frame, extra.set_index(frame.index)], axis=1)


def require_columns(
    frame: pd.DataFrame, table: str, columns: tuple[str, ...], sweep_dir: Path, among: str = ""
) -> None:
    # read_table fills columns a file lacks with nulls, so a missing column shows up as one without values.
    empty = [col for col in columns if frame[col].isna().all()]
    if empty:
        raise AnalysisError(
            f"the {table} table of {sweep_dir} has no values in needed column(s) "
            f"{', '.join(empty)} among its {among}rows"
        )


def suggest_sweeps(path: Path) -> str:
    """A results directory given instead of a sweep directory: name the sweeps inside it."""
    sweeps = sorted(p.name for p in path.iterdir() if (p / "trials").is_dir()) if path.is_dir() else []
    return f"; did you mean one of its sweeps: {', '.join(sweeps)}?" if sweeps else ""
