"""``--log-to mlflow|wandb``: every trial a run in an experiment tracker, when its package is installed.

MLflow: the sweep's own Tune callback (``raysweep.watch.mlflow_logger``): a run for the sweep, the trials' runs nested
in it, the report attached at the end. W&B: Ray Tune's ``WandbLoggerCallback``.
"""

from __future__ import annotations

import os
from importlib.util import find_spec
from pathlib import Path

from raysweep.core.errors import UsageError
from raysweep.core.names import unknown_name

TRACKERS = ("mlflow", "wandb")


def check_trackers(names: list[str]) -> None:
    """Refuse, before anything starts, an unknown tracker or one whose package is missing (one line, exit 2)."""
    for name in names:
        if name not in TRACKERS:
            raise UsageError(f"--log-to: {unknown_name('tracker', name, TRACKERS)}")
        if find_spec(name) is None:
            raise UsageError(f"--log-to {name} needs the {name} package, which is not installed (pip install {name})")


def start_trackers(names: list[str], sweep: str, sweep_root: Path) -> None:
    """Connect every tracker now, before Ray starts: one that cannot start (a tracking server that does not
    answer within seconds included) raises ``UsageError`` while its caller can still remove the sweep's
    directory (the sweep's callbacks connect again)."""
    tracker_callbacks(names, sweep, sweep_root)


def tracker_callbacks(names: list[str], sweep: str, sweep_root: Path) -> list:
    """One Tune logger callback per tracker; every trial becomes a run in the sweep's experiment/group."""
    callbacks = []
    for name in dict.fromkeys(names):  # --log-to mlflow --log-to mlflow logs once
        if name == "mlflow":
            from raysweep.watch.mlflow_logger import MLflowCallback, mlflow_uri

            callbacks.append(MLflowCallback(mlflow_uri(sweep_root), sweep, sweep_root))
        elif name == "wandb":
            from ray.air.integrations.wandb import WandbLoggerCallback

            # W&B reads its key and mode (WANDB_API_KEY, WANDB_MODE=offline) from the environment.
            callbacks.append(WandbLoggerCallback(project=os.environ.get("WANDB_PROJECT", "raysweep"), group=sweep))
    return callbacks


def attach_report(callbacks: list, report: Path | None) -> None:
    """The sweep's report, once written, as artifacts of the trackers' sweep run (MLflow's parent run).

    The tables and the report are written already: a tracker that fails here is said in one line, not raised."""
    if report is None:
        return
    from raysweep.watch.mlflow_logger import MLflowCallback

    for callback in callbacks:
        if isinstance(callback, MLflowCallback):
            try:
                callback.attach_report(report)
            except Exception as e:  # the tracker's store or server: nothing of the sweep depends on it
                print(f"mlflow: report not attached: {(str(e).strip().splitlines() or [type(e).__name__])[0]}")
