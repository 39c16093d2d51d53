"""Per-epoch TensorBoard scalars of every trial: ``tensorboard --logdir <results-dir>/<sweep>``.

Written from the CLI's process as Tune reports each epoch, one run per trial under
``<sweep>/tensorboard/<run>/``, the run named by the trial's parameters so TensorBoard's run
list reads like the sweep's axes. Its scalars are named as the tables' columns (``val_accuracy``,
``throughput``): each epoch's figures at the epoch as the step, the trial's (``peak_mem_gib``,
``setup_s`` ...) at its last epoch. Each run also holds the HParams plugin's session summaries (the
trial's parameters), so TensorBoard's HParams tab compares the trials by parameter against their scalars.
"""

from __future__ import annotations

import math
from pathlib import Path

from ray.tune.logger import LoggerCallback

from raysweep.core.params import TrialParams
from raysweep.core.schema import (
    EPOCH_KEY,
    RANKS_KEY,
    TRACKED_EPOCH_COLUMNS,
    TRACKED_TRIAL_COLUMNS,
    params_row,
)
from raysweep.core.spec import spec_of
from raysweep.core.store import ResultStore

# Each rank's figures per epoch, as ``rank<N>/<column>`` (the ranks table's columns).
RANK_SCALARS = ("step_time_ms", "busy_ms", "wait_ms", "peak_mem_gib")
# Parameters named in a run only when they differ from their defaults, to keep names short.
# Parameter -> its prefix in the name: "-z2-sgd-bf16-ddp-strictspread-slow0".
EXTRA_NAME_PARAMS = {
    "zero_stage": "z",
    "optimizer": "",
    "precision": "",
    "engine": "",
    "placement_strategy": "",
    "slow_ranks": "slow",
}


def run_name(trial_id: str, params: TrialParams) -> str:
    """``<trial_id>-w2-mb64-acc1``, then any of EXTRA_NAME_PARAMS that is not at its default."""
    parts = [trial_id, params.batch_label("-")]
    defaults = TrialParams()
    for key, prefix in EXTRA_NAME_PARAMS.items():
        value = getattr(params, key)
        if value != getattr(defaults, key) and not (key == "precision" and value == "fp32"):  # auto on CPU
            parts.append(f"{prefix}{value}".lower().replace("_", "").replace(",", "+").replace("/", "+"))
    return "-".join(parts)


def trial_parameters(params: TrialParams) -> dict[str, str | int | float | bool]:
    """The trial's parameters as a tracker records them: the trials table's configuration columns (the values
    the trial resolved), unset ones left out, anything not a number, string or bool as its text."""
    return {
        key: value if isinstance(value, (str, int, float, bool)) else str(value)
        for key, value in params_row(params).items()
        if value is not None
    }


def finite(value) -> bool:
    return isinstance(value, (int, float)) and not isinstance(value, bool) and math.isfinite(value)


def epoch_figures(row: dict) -> dict[str, float]:
    """An epoch's figures as the trackers log them: its ``epochs`` columns (TRACKED_EPOCH_COLUMNS) holding numbers."""
    return {name: row[name] for name in TRACKED_EPOCH_COLUMNS if finite(row.get(name))}


def trial_figures(store: ResultStore, trial_id: str) -> dict[str, float]:
    """The figures of the trial's ``trials`` row the trackers log at its end (TRACKED_TRIAL_COLUMNS).

    Read back as the recorder wrote it: the sweep's ``ResultTablesCallback`` comes before the trackers in
    Tune's callbacks, so the row of a trial that just ended is on disk when a tracker's ``log_trial_end`` runs.
    """
    rows = store.read_trial_rows("trials", trial_id)
    row = rows[-1] if rows else {}
    return {name: row[name] for name in TRACKED_TRIAL_COLUMNS if finite(row.get(name))}


def sweep_store(sweep_root: Path) -> ResultStore:
    """The result store of the sweep directory ``sweep_root``."""
    return ResultStore(Path(sweep_root).parent, Path(sweep_root).name)


class TensorBoardCallback(LoggerCallback):
    """Writes the sweep's TensorBoard runs.  The sweep turns off Tune's own TBXLoggerCallback
    (TUNE_DISABLE_AUTO_CALLBACK_LOGGERS): it would write a second run per trial under ``_tune/``,
    every nested result flattened, into the same logdir, and print a logdir that holds neither."""

    def __init__(self, sweep_root: Path):
        self.root = Path(sweep_root) / "tensorboard"
        self.store = sweep_store(sweep_root)
        self.writers: dict = {}  # trial_id -> SummaryWriter
        self.last_epoch: dict[str, int] = {}  # trial_id -> the step its trial figures are written at

    def writer_for(self, logdir: Path):
        from tensorboardX import SummaryWriter

        return SummaryWriter(str(logdir), flush_secs=10)

    def log_trial_start(self, trial) -> None:
        if trial.trial_id in self.writers:
            self.writers[trial.trial_id].close()
        params = spec_of(trial.config).params
        writer = self.writer_for(self.root / run_name(trial.trial_id, params))
        writer.add_text("params", "\n".join(f"    {k}: {v}" for k, v in sorted(params.to_dict().items())), 0)
        writer.file_writer.add_summary(hparams_summaries(params)[0])
        self.writers[trial.trial_id] = writer

    def log_trial_result(self, iteration: int, trial, result: dict) -> None:
        row = result.get(EPOCH_KEY)
        if not row:
            return
        if trial.trial_id not in self.writers:
            self.log_trial_start(trial)
        writer, step = self.writers[trial.trial_id], row["epoch"]
        self.last_epoch[trial.trial_id] = step
        for name, value in epoch_figures(row).items():
            writer.add_scalar(name, value, global_step=step)
        for rank, rank_row in (result.get(RANKS_KEY) or {}).items():
            for column in RANK_SCALARS:
                if finite(rank_row.get(column)):
                    writer.add_scalar(f"rank{rank}/{column}", rank_row[column], global_step=step)
        writer.flush()  # an epoch is rare and a person may be watching: show it now

    def log_trial_end(self, trial, failed: bool = False) -> None:
        writer = self.writers.pop(trial.trial_id, None)
        if writer is not None:
            step = self.last_epoch.pop(trial.trial_id, 0)
            for name, value in trial_figures(self.store, trial.trial_id).items():
                writer.add_scalar(name, value, global_step=step)
            writer.file_writer.add_summary(hparams_summaries(spec_of(trial.config).params)[1])
            writer.close()

    def on_experiment_end(self, trials, **info) -> None:
        for writer in self.writers.values():
            writer.close()
        self.writers.clear()


def hparams_summaries(params: TrialParams) -> tuple:
    """The HParams plugin's session start (the trial's parameters) and end summaries of one run.

    No experiment summary is written: without one, TensorBoard builds the experiment from every run's
    session start, with each parameter's values across the trials and every scalar tag as a metric.
    """
    from tensorboardX.summary import hparams

    _experiment, start, end = hparams(trial_parameters(params), {})
    return start, end
