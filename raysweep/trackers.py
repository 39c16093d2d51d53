"""``--log-to mlflow|wandb``: Ray Tune's own experiment-tracker callbacks, when their package is installed."""

from __future__ import annotations

import os
from importlib.util import find_spec
from pathlib import Path

from raysweep.core.errors import UsageError

TRACKERS = ("mlflow", "wandb")


def check_trackers(names: list[str]) -> None:
    """Refuse, before anything starts, a tracker whose package is missing (one line, exit 2)."""
    for name in names:
        if find_spec(name) is None:
            raise UsageError(f"--log-to {name} needs the {name} package, which is not installed (pip install {name})")


def tracker_callbacks(names: list[str], sweep: str, sweep_root: Path) -> list:
    """One Tune logger callback per tracker; every trial becomes a run in the sweep's experiment/group."""
    callbacks = []
    for name in dict.fromkeys(names):  # --log-to mlflow --log-to mlflow logs once
        if name == "mlflow":
            from ray.air.integrations.mlflow import MLflowLoggerCallback

            # A file store inside the sweep by default, so the sweep directory holds everything;
            # MLFLOW_TRACKING_URI points it at a tracking server instead.
            uri = os.environ.get("MLFLOW_TRACKING_URI") or (Path(sweep_root) / "mlruns").resolve().as_uri()
            callbacks.append(MLflowLoggerCallback(tracking_uri=uri, experiment_name=sweep))
        elif name == "wandb":
            from ray.air.integrations.wandb import WandbLoggerCallback

            # W&B reads its key and mode (WANDB_API_KEY, WANDB_MODE=offline) from the environment.
            callbacks.append(WandbLoggerCallback(project=os.environ.get("WANDB_PROJECT", "raysweep"), group=sweep))
    return callbacks
