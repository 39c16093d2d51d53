"""Time to accuracy: training time from the first step until the held-out accuracy first reaches a target."""

from __future__ import annotations

from dataclasses import dataclass

import pandas as pd

from analysis.rows.budget import Budget, budget_of
from analysis.rows.errors import AnalysisError
from analysis.rows.evidence import Verdict, compare
from analysis.rows.groups import NOT_A_DIFFERENCE, configuration_key, trial_labels

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


@dataclass(frozen=True)
class AccuracyPoint:
    """One point's (a configuration's repeats') times to the target, of the repeats that reached it."""

    label: str
    times_s: tuple[float, ...]
    repeats: int  # every repeat of the point, reached or not
    budget: Budget | None = None  # what its trials trained on in all (epochs, optimizer steps, samples)

    @property
    def median_s(self) -> float:
        return float(pd.Series(self.times_s).median())


def accuracy_points(per_trial: pd.DataFrame, trials: pd.DataFrame) -> list[AccuracyPoint]:
    """Points with a repeat that reached the target, fastest median first (``per_trial``'s time_to_accuracy_s;
    ``trials``: their parameters, which name the points)."""
    completed = trials[trials["trial_id"].isin(per_trial["trial_id"])]
    keys = dict(zip(completed["trial_id"], completed.apply(configuration_key, axis=1)))
    labels = trial_labels(completed, ignore=NOT_A_DIFFERENCE)
    times = per_trial.set_index("trial_id")["time_to_accuracy_s"]
    points = []
    for key in sorted(set(keys.values())):
        ids = [t for t, k in keys.items() if k == key]
        reached = tuple(float(times[t]) for t in ids if pd.notna(times[t]))
        if reached:
            budget = budget_of(completed[completed["trial_id"].isin(ids)])
            points.append(AccuracyPoint(labels[ids[0]], reached, len(ids), budget))
    return sorted(points, key=lambda p: p.median_s)


def fastest_verdict(points: list[AccuracyPoint]) -> Verdict | None:
    """The rule on the two fastest points: the runner-up's times above the fastest's; None with one point."""
    return compare(points[1].times_s, points[0].times_s) if len(points) >= 2 else None
