"""Stragglers from the per-rank rows: how much slower the slowest rank is and what its wait costs the others."""

from __future__ import annotations

import pandas as pd

STRAGGLER_COLUMNS = [
    "trial_id",
    "ranks",
    "slowest_rank",
    "straggler_basis",
    "straggler_ratio",
    "others_wait_ms",
    "straggler_cost_fraction",
]


def straggler_row(trial_id: str, ranks: pd.DataFrame, step_time_ms: float | None) -> dict:
    # Compute time excludes the wait at the barrier, so it shows the slow rank itself; the step time
    # of a synchronous step is the same on every rank and is only the fallback.
    basis = "compute_ms" if ranks["compute_ms"].notna().all() else "step_time_ms"
    slowest = ranks.loc[ranks[basis].idxmax()]
    others = ranks.drop(index=slowest.name)
    others_wait = float(others["wait_ms"].mean())
    step = step_time_ms if step_time_ms and step_time_ms > 0 else float(ranks["step_time_ms"].median())
    return {
        "trial_id": trial_id,
        "ranks": len(ranks),
        "slowest_rank": int(slowest["rank"]),
        "straggler_basis": basis,
        "straggler_ratio": float(slowest[basis] / ranks[basis].median()),
        "others_wait_ms": others_wait,
        "straggler_cost_fraction": others_wait / step if step > 0 else None,
    }


def stragglers(trials: pd.DataFrame, ranks: pd.DataFrame) -> pd.DataFrame:
    """One row per trial with at least two ranks measured."""
    step_times = trials.set_index("trial_id")["step_time_ms"].to_dict()
    rows = [
        straggler_row(trial_id, part, step_times.get(trial_id))
        for trial_id, part in ranks.dropna(subset=["step_time_ms"]).groupby("trial_id", sort=True)
        if len(part) >= 2
    ]
    return pd.DataFrame(rows, columns=STRAGGLER_COLUMNS)
