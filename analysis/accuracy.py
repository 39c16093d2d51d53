"""Time to accuracy: training time from the first step until the held-out accuracy first reaches a target."""

from __future__ import annotations

import pandas as pd

from analysis.errors import AnalysisError

DEFAULT_TARGET_SHARE = 0.9  # default target: this share of the best validation accuracy in the sweep


def default_target(epochs: pd.DataFrame) -> float:
    return DEFAULT_TARGET_SHARE * float(epochs["val_accuracy"].max())


def check_target(target: float) -> None:
    if not 0 < target <= 1:
        raise AnalysisError(f"target accuracy must be a fraction in (0, 1], got {target}")


def clock_column(epochs: pd.DataFrame) -> str:
    """``train_elapsed_s`` (training time from the first step, validation and checkpoints excluded) where every
    epoch row has it; tables from before it have only ``elapsed_s``, wall time from the trial's start."""
    return "train_elapsed_s" if len(epochs) and epochs["train_elapsed_s"].notna().all() else "elapsed_s"


def time_to_accuracy(trial_ids: list[str], epochs: pd.DataFrame, target: float) -> pd.DataFrame:
    """One row per trial: the first epoch at or above ``target`` and its training time then; nulls if never."""
    clock = clock_column(epochs)
    ordered = epochs.dropna(subset=["val_accuracy", clock]).sort_values(["trial_id", "epoch"])
    reached = ordered[ordered["val_accuracy"] >= target].groupby("trial_id").first()
    result = pd.DataFrame({"trial_id": trial_ids})
    result["time_to_accuracy_s"] = result["trial_id"].map(reached[clock]).astype(float)
    result["epoch_reached"] = result["trial_id"].map(reached["epoch"]).astype("Int64")
    return result
