"""``--log-to mlflow``: one MLflow run per trial, written from the sweep's process as Tune reports.

The runs go into the experiment named after the sweep, in a SQLite database inside the sweep
(``<sweep>/mlflow.db``; MLflow 3 refuses its old file store) or at ``MLFLOW_TRACKING_URI``. A run is
named as the trial's TensorBoard run, its params are the trial's parameters (the trials table's
configuration columns) and its metrics the measurements of each report: the epoch's figures under
their TensorBoard tags and the trial report's columns, each at its epoch as the step.
"""

from __future__ import annotations

import logging
import os
import time
from contextlib import contextmanager
from pathlib import Path

from ray.tune.logger import LoggerCallback

from raysweep.core.errors import UsageError
from raysweep.core.schema import EPOCH_KEY, TRIAL_KEY, TrialReport, columns_of
from raysweep.core.spec import spec_of
from raysweep.tensorboard_logger import EPOCH_SCALARS, finite, run_name, trial_parameters

MLFLOW_DB = "mlflow.db"
# The trial report's measurements logged as metrics.
TRIAL_METRICS = tuple(f.name for f in columns_of(TrialReport))


def mlflow_uri(sweep_root: Path) -> str:
    """``MLFLOW_TRACKING_URI`` if set, else a SQLite database inside the sweep, so its directory holds everything."""
    return os.environ.get("MLFLOW_TRACKING_URI") or f"sqlite:///{(Path(sweep_root) / MLFLOW_DB).resolve()}"


# A new database store logs its table creation and each schema migration at INFO.
MIGRATION_LOGGERS = ("mlflow.store.db.utils", "alembic")


@contextmanager
def quiet_migrations():
    """Keep MIGRATION_LOGGERS to warnings while a store is opened."""
    loggers = [logging.getLogger(name) for name in MIGRATION_LOGGERS]
    levels = [logger.level for logger in loggers]
    for logger in loggers:
        logger.setLevel(logging.WARNING)
    try:
        yield
    finally:
        for logger, level in zip(loggers, levels):
            logger.setLevel(level)


class MLflowCallback(LoggerCallback):
    """One MLflow run per trial in the experiment named after the sweep; connects as it is made."""

    def __init__(self, uri: str, sweep: str):
        try:
            from mlflow import MlflowClient

            with quiet_migrations():
                self.client = MlflowClient(tracking_uri=uri)
                experiment = self.client.get_experiment_by_name(sweep)
                self.experiment_id = experiment.experiment_id if experiment else self.client.create_experiment(sweep)
        except Exception as e:  # MLflow raises its own and its stores' errors: any of them means no tracker
            reason = (str(e).strip().splitlines() or [type(e).__name__])[0]
            raise UsageError(f"--log-to mlflow: cannot start MLflow at {uri}: {reason}") from None
        self.runs: dict[str, str] = {}  # trial_id -> run_id

    def log_trial_start(self, trial) -> None:
        from mlflow.entities import Param

        if trial.trial_id in self.runs:  # a trial restarted after its worker group failed: the same run
            return
        params = spec_of(trial.config).params
        run = self.client.create_run(
            self.experiment_id, run_name=run_name(trial.trial_id, params), tags={"trial_id": trial.trial_id}
        )
        self.runs[trial.trial_id] = run.info.run_id
        self.client.log_batch(
            run.info.run_id, params=[Param(k, str(v)) for k, v in sorted(trial_parameters(params).items())]
        )

    def log_trial_result(self, iteration: int, trial, result: dict) -> None:
        from mlflow.entities import Metric

        row = result.get(EPOCH_KEY)
        if not row:
            return
        if trial.trial_id not in self.runs:
            self.log_trial_start(trial)
        step, now = int(row["epoch"]), int(1000 * time.time())
        values = {tag: row.get(column) for tag, column in EPOCH_SCALARS.items()}
        values.update({name: (result.get(TRIAL_KEY) or {}).get(name) for name in TRIAL_METRICS})
        metrics = [Metric(key, float(value), now, step) for key, value in values.items() if finite(value)]
        if metrics:
            self.client.log_batch(self.runs[trial.trial_id], metrics=metrics)

    def log_trial_end(self, trial, failed: bool = False) -> None:
        run_id = self.runs.pop(trial.trial_id, None)
        if run_id is not None:
            self.client.set_terminated(run_id, status="FAILED" if failed else "FINISHED")
