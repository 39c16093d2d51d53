"""Reading one sweep directory into data frames of measured rows (completed trials only)."""

from __future__ import annotations

import math
from dataclasses import dataclass, field
from pathlib import Path

import pandas as pd
import pyarrow as pa

from analysis.errors import AnalysisError
from raysweep.errors import UsageError
from raysweep.params import LR_RULES
from raysweep.store import read_table

REQUIRED_TRIAL_COLUMNS = ("trial_id", "status", "num_workers", "micro_batch_per_worker", "train_time_s", "throughput")
# val_accuracy may be empty throughout (synthetic data has no held-out split): accuracy sections then say so.
REQUIRED_EPOCH_COLUMNS = ("trial_id", "epoch", "elapsed_s")
REQUIRED_RANK_COLUMNS = ("trial_id", "rank", "step_time_ms", "wait_ms")


@dataclass
class SweepData:
    """Completed trials and their epochs and ranks; ``left_out`` counts the other trials by status."""

    sweep_dir: Path
    trials: pd.DataFrame
    epochs: pd.DataFrame
    ranks: pd.DataFrame
    left_out: dict[str, int] = field(default_factory=dict)

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
    trials = read(sweep_dir, "trials")
    require_columns(trials, "trials", ("trial_id", "status"), sweep_dir)
    status = trials["status"].fillna("unknown")
    completed = trials[status == "completed"].copy()
    if completed.empty:
        raise AnalysisError(f"no completed trials in {sweep_dir} (statuses: {status.value_counts().to_dict()})")
    require_columns(completed, "trials", REQUIRED_TRIAL_COLUMNS, sweep_dir, among="completed ")
    lr_inputs = completed[["lr", "optimizer", "global_batch"]].itertuples(index=False)
    completed["lr_follows_rule"] = [follows_lr_rule(*row) for row in lr_inputs]
    done = set(completed["trial_id"])
    epochs = read(sweep_dir, "epochs")
    epochs = epochs[epochs["trial_id"].isin(done)]
    if not epochs.empty:
        require_columns(epochs, "epochs", REQUIRED_EPOCH_COLUMNS, sweep_dir)
    ranks = read(sweep_dir, "ranks")
    ranks = ranks[ranks["trial_id"].isin(done)]
    if not ranks.empty:
        require_columns(ranks, "ranks", REQUIRED_RANK_COLUMNS, sweep_dir)
    left_out = status[status != "completed"].value_counts().sort_index().to_dict()
    return SweepData(
        sweep_dir,
        completed.reset_index(drop=True),
        epochs.reset_index(drop=True),
        ranks.reset_index(drop=True),
        {str(k): int(v) for k, v in left_out.items()},
    )


def read(sweep_dir: Path, table: str) -> pd.DataFrame:
    try:
        return read_table(sweep_dir / table, table).to_pandas()
    except (pa.ArrowException, OSError, UsageError) as exc:
        first_line = str(exc).splitlines()[0] if str(exc) else type(exc).__name__
        raise AnalysisError(f"cannot read the {table} table of {sweep_dir}: {first_line}") from exc


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


def follows_lr_rule(lr: float | None, optimizer: str | None, global_batch: int | None) -> bool:
    """Whether ``lr`` is the optimizer's batch-scaling rule at this global batch (raysweep.params.LR_RULES)."""
    if pd.isna(lr) or optimizer not in LR_RULES or pd.isna(global_batch) or global_batch <= 0:
        return False
    base, reference, rule = LR_RULES[optimizer]
    ratio = global_batch / reference
    return math.isclose(lr, base * (ratio if rule == "linear" else ratio**0.5), rel_tol=1e-9)
