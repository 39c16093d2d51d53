"""``--log-to mlflow``: one MLflow run for the sweep, a nested run per trial, written from the sweep's process.

The runs go into the experiment named after the sweep, in a SQLite database inside the sweep
(``<sweep>/mlflow.db``; MLflow 3 refuses its old file store) with their artifacts in ``<sweep>/mlartifacts``,
or at ``MLFLOW_TRACKING_URI`` (with that store's artifact location). A trial's run is named as its
TensorBoard run, its params are the trial's parameters (the trials table's configuration columns) and its
metrics the figures the tables hold, under their column names (``raysweep.core.schema``'s tracked columns):
each epoch's at the epoch as the step, the trial's at its last epoch. The sweep's run gets the report as
artifacts once it is written.
"""

from __future__ import annotations

import logging
import os
import ssl
import time
import urllib.error
import urllib.parse
import urllib.request
from contextlib import contextmanager
from pathlib import Path

from ray.tune.logger import LoggerCallback

from raysweep.core.errors import UsageError
from raysweep.core.schema import EPOCH_KEY
from raysweep.core.spec import spec_of
from raysweep.watch.tensorboard_logger import epoch_figures, run_name, sweep_store, trial_figures, trial_parameters

MLFLOW_DB = "mlflow.db"
MLFLOW_ARTIFACTS = "mlartifacts"
# How long a tracking server may take to answer before the sweep is refused: MLflow's own client
# retries an unanswered server for minutes.
SERVER_TIMEOUT_S = 5


def own_store(sweep_root: Path) -> str:
    """The sweep's own tracking store: a SQLite database inside it."""
    return f"sqlite:///{(Path(sweep_root) / MLFLOW_DB).resolve()}"


def mlflow_uri(sweep_root: Path) -> str:
    """``MLFLOW_TRACKING_URI`` if set, else the sweep's own store, so its directory holds everything."""
    return os.environ.get("MLFLOW_TRACKING_URI") or own_store(sweep_root)


def artifact_location(uri: str, sweep_root: Path) -> str | None:
    """Where a new experiment keeps its runs' artifacts: ``<sweep>/mlartifacts`` with the sweep's own store
    (MLflow's default is ``./mlruns`` wherever the sweep was started); a store the user named keeps its own."""
    return (Path(sweep_root) / MLFLOW_ARTIFACTS).resolve().as_uri() if uri == own_store(sweep_root) else None


def check_server(uri: str) -> None:
    """An HTTP(S) tracking server must answer (any HTTP status) within SERVER_TIMEOUT_S; other stores are
    checked by opening them."""
    parts = urllib.parse.urlsplit(uri)
    if parts.scheme not in ("http", "https"):
        return
    port = f":{parts.port}" if parts.port else ""
    server = urllib.parse.urlunsplit((parts.scheme, f"{parts.hostname}{port}", parts.path, "", ""))  # no password
    try:
        urllib.request.urlopen(f"{server.rstrip('/')}/health", timeout=SERVER_TIMEOUT_S).close()
    except urllib.error.HTTPError:
        return  # it answered
    except (OSError, ValueError) as e:  # refused, timed out, no such host
        reason = getattr(e, "reason", None) or e
        if isinstance(reason, ssl.SSLError):
            return  # it answered; MLflow's own TLS settings (MLFLOW_TRACKING_INSECURE_TLS ...) decide the rest
        raise UsageError(
            f"--log-to mlflow: no MLflow tracking server answers at {server} ({reason}); start it, or point "
            "MLFLOW_TRACKING_URI at one that runs (unset, the runs go into the sweep)"
        ) from None


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
    """The sweep's run and a nested run per trial, in the experiment named after the sweep; connects as it is made.

    The sweep's run starts when Tune sets up the experiment and ends when it ends (FINISHED, or KILLED when
    trials were left unfinished); ``attach_report`` adds the report to it afterwards.
    """

    def __init__(self, uri: str, sweep: str, sweep_root: Path):
        check_server(uri)
        try:
            from mlflow import MlflowClient

            with quiet_migrations():
                self.client = MlflowClient(tracking_uri=uri)
                experiment = self.client.get_experiment_by_name(sweep)
                self.experiment_id = (
                    experiment.experiment_id
                    if experiment
                    else self.client.create_experiment(sweep, artifact_location=artifact_location(uri, sweep_root))
                )
        except Exception as e:  # MLflow raises its own and its stores' errors: any of them means no tracker
            reason = (str(e).strip().splitlines() or [type(e).__name__])[0]
            raise UsageError(f"--log-to mlflow: cannot start MLflow at {uri}: {reason}") from None
        self.sweep = sweep
        self.store = sweep_store(sweep_root)
        self.sweep_run: str | None = None
        self.runs: dict[str, str] = {}  # trial_id -> run_id
        self.last_epoch: dict[str, int] = {}  # trial_id -> the step its trial figures are logged at

    def setup(self, *args, **info) -> None:
        self.sweep_run_id()

    def sweep_run_id(self) -> str:
        """The sweep's run, started on first use."""
        if self.sweep_run is None:
            run = self.client.create_run(self.experiment_id, run_name=self.sweep, tags={"sweep": self.sweep})
            self.sweep_run = run.info.run_id
        return self.sweep_run

    def log_trial_start(self, trial) -> None:
        from mlflow.entities import Param
        from mlflow.utils.mlflow_tags import MLFLOW_PARENT_RUN_ID

        if trial.trial_id in self.runs:  # a trial restarted after its worker group failed: the same run
            return
        params = spec_of(trial.config).params
        run = self.client.create_run(
            self.experiment_id,
            run_name=run_name(trial.trial_id, params),
            tags={"trial_id": trial.trial_id, MLFLOW_PARENT_RUN_ID: self.sweep_run_id()},
        )
        self.runs[trial.trial_id] = run.info.run_id
        self.client.log_batch(
            run.info.run_id, params=[Param(k, str(v)) for k, v in sorted(trial_parameters(params).items())]
        )

    def log_trial_result(self, iteration: int, trial, result: dict) -> None:
        row = result.get(EPOCH_KEY)
        if not row:
            return
        if trial.trial_id not in self.runs:
            self.log_trial_start(trial)
        step = self.last_epoch[trial.trial_id] = int(row["epoch"])
        self.log_figures(self.runs[trial.trial_id], epoch_figures(row), step)

    def log_trial_end(self, trial, failed: bool = False) -> None:
        run_id = self.runs.pop(trial.trial_id, None)
        if run_id is not None:
            step = self.last_epoch.pop(trial.trial_id, 0)
            self.log_figures(run_id, trial_figures(self.store, trial.trial_id), step)
            self.client.set_terminated(run_id, status="FAILED" if failed else "FINISHED")

    def log_figures(self, run_id: str, figures: dict[str, float], step: int) -> None:
        from mlflow.entities import Metric

        now = int(1000 * time.time())
        if figures:
            self.client.log_batch(run_id, metrics=[Metric(k, float(v), now, step) for k, v in figures.items()])

    def on_experiment_end(self, trials, **info) -> None:
        """Tune ended the sweep (all trials done, or stopped): runs still open are KILLED, then the sweep's run."""
        for run_id in self.runs.values():
            self.client.set_terminated(run_id, status="KILLED")
        self.runs.clear()
        if self.sweep_run is not None:
            unfinished = any(t.status not in ("TERMINATED", "ERROR") for t in trials)
            self.client.set_terminated(self.sweep_run, status="KILLED" if unfinished else "FINISHED")

    def attach_report(self, report: Path) -> None:
        """The report's directory (report.md, report.html, its plots) as the sweep run's ``report/`` artifacts."""
        self.client.log_artifacts(self.sweep_run_id(), str(report.parent), artifact_path="report")
