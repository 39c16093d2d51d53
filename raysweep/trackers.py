"""``--log-to mlflow|wandb``: every trial a run in an experiment tracker, when its package is installed.

MLflow: the sweep's own Tune callback (``raysweep.mlflow_logger``). W&B: Ray Tune's ``WandbLoggerCallback``.
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
    """Connect every tracker now, before the sweep begins: one that cannot start raises ``UsageError``
    while its caller can still remove the sweep's directory (the sweep's callbacks connect again)."""
    tracker_callbacks(names, sweep, sweep_root)


def tracker_callbacks(names: list[str], sweep: str, sweep_root: Path) -> list:
    """One Tune logger callback per tracker; every trial becomes a run in the sweep's experiment/group."""
    callbacks = []
    for name in dict.fromkeys(names):  # --log-to mlflow --log-to mlflow logs once
        if name == "mlflow":
            from raysweep.mlflow_logger import MLflowCallback, mlflow_uri

            callbacks.append(MLflowCallback(mlflow_uri(sweep_root), sweep))
        elif name == "wandb":
            from ray.air.integrations.wandb import WandbLoggerCallback

            # W&B reads its key and mode (WANDB_API_KEY, WANDB_MODE=offline) from the environment.
            callbacks.append(WandbLoggerCallback(project=os.environ.get("WANDB_PROJECT", "raysweep"), group=sweep))
    return callbacks
