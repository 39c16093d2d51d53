"""What a point trained on: epochs, optimizer steps and samples seen, stated beside every accuracy finding.

At a fixed number of epochs a larger batch takes fewer optimizer steps (16x fewer from micro batch 16 to 256),
so its accuracy can fall from under-training alone. A fall of accuracy between two points is put down to the
batch size only where their optimizer steps are within ``STEP_FACTOR`` of each other (a step-matched
comparison); otherwise the finding says that too few steps would give the same fall.
"""

from __future__ import annotations

from dataclasses import dataclass

import pandas as pd

STEP_FACTOR = 2.0  # optimizer steps within this factor of each other: the points are step-matched


@dataclass(frozen=True)
class Budget:
    """A point's training budget, the median over its trials."""

    epochs: float
    optimizer_steps: float
    samples: float  # optimizer steps x global batch

    def text(self) -> str:
        return f"{self.epochs:g} epochs, {self.optimizer_steps:g} optimizer steps, {self.samples:g} samples"


def budget_of(rows: pd.DataFrame) -> Budget | None:
    """The budget of a point's trials (their ``epochs``, ``optimizer_steps`` and ``global_batch`` columns); None
    where the table does not record its steps."""
    needed = ("epochs", "optimizer_steps", "global_batch")
    if rows.empty or any(c not in rows or rows[c].isna().all() for c in needed):
        return None
    steps = float(rows["optimizer_steps"].median())
    return Budget(
        float(rows["epochs"].median()), steps, float((rows["optimizer_steps"] * rows["global_batch"]).median())
    )


def steps_ratio(a: Budget, b: Budget) -> float:
    """How many times more optimizer steps the one trained than the other (>= 1)."""
    low, high = sorted((a.optimizer_steps, b.optimizer_steps))
    return high / low if low > 0 else float("inf")


def step_matched(a: Budget, b: Budget) -> bool:
    return steps_ratio(a, b) <= STEP_FACTOR


def fall_cause(small: Budget | None, large: Budget | None, large_label: str) -> str:
    """Which explanation of an accuracy fall from ``small`` to ``large`` (batch) the budgets allow."""
    if small is None or large is None:
        return "the tables do not record the points' optimizer steps, so a fall cannot be put down to the batch size"
    if step_matched(small, large):
        return (
            f"the points trained within {STEP_FACTOR:g}x the same optimizer steps, so a fall between them is the "
            "batch size's (as the paper reports at large batch)"
        )
    return (
        f"{large_label} trained {steps_ratio(small, large):.0f}x fewer optimizer steps, and too few steps alone "
        "lower accuracy: the fall is not put down to the batch size without a step-matched comparison (the same "
        f"optimizer steps, within {STEP_FACTOR:g}x, at every batch)"
    )
