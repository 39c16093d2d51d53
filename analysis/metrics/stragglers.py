"""Stragglers from the per-rank rows: how much slower the slowest rank is and what its wait costs the others."""

from __future__ import annotations

from dataclasses import dataclass

import pandas as pd

from analysis.rows.evidence import Verdict, compare
from analysis.rows.groups import configuration_key

STRAGGLER_COLUMNS = [
    "trial_id",
    "ranks",
    "slowest_rank",
    "straggler_basis",
    "straggler_ratio",
    "slowdown_achieved",
    "others_wait_ms",
    "straggler_cost_fraction",
]


def straggler_basis(ranks: pd.DataFrame) -> str:
    # Busy time excludes the wait at the barrier, so it shows the slow rank itself; the step time of a
    # synchronous step is the same on every rank and is only the fallback. compute_ms is busy_ms's old name.
    for basis in ("busy_ms", "compute_ms"):
        if ranks[basis].notna().all():
            return basis
    return "step_time_ms"


def straggler_row(trial_id: str, ranks: pd.DataFrame, step_time_ms: float | None) -> dict:
    basis = straggler_basis(ranks)
    slowest = ranks.loc[ranks[basis].idxmax()]
    others = ranks.drop(index=slowest.name)
    # Against the median of the other ranks: with the slowest inside it, a 1.3x rank of two reads 1.15x.
    others_median = float(others[basis].median())
    others_wait = float(others["wait_ms"].mean()) if others["wait_ms"].notna().any() else float("nan")
    step = step_time_ms if step_time_ms and step_time_ms > 0 else float(ranks["step_time_ms"].median())
    return {
        "trial_id": trial_id,
        "ranks": len(ranks),
        "slowest_rank": int(slowest["rank"]),
        "straggler_basis": basis,
        "straggler_ratio": float(slowest[basis] / others_median) if others_median > 0 else float("nan"),
        "slowdown_achieved": float(slowest["slowdown_achieved"])
        if pd.notna(slowest["slowdown_achieved"])
        else float("nan"),
        "others_wait_ms": others_wait,
        "straggler_cost_fraction": others_wait / step if step > 0 and pd.notna(others_wait) else float("nan"),
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


@dataclass(frozen=True)
class Straggler:
    """The slowest rank of one configuration over its repeats, tested against the other ranks."""

    trial_ids: tuple[str, ...]
    rank: int
    basis: str
    ratio: float  # the rank's median over the other ranks' median (of ``basis``, all repeats)
    others_wait_ms: float
    cost_fraction: float
    slowed: bool  # the configuration slows ranks on purpose (slow_ranks)
    verdict: Verdict  # the rank's values against the other ranks' values


def stragglers_by_configuration(trials: pd.DataFrame, ranks: pd.DataFrame, per_trial: pd.DataFrame) -> list[Straggler]:
    """Per configuration of two or more ranks: the rank slowest in the median over its repeats."""
    measured = ranks.dropna(subset=["step_time_ms"])
    multi = trials[trials["trial_id"].isin(per_trial["trial_id"])]
    if multi.empty:
        return []
    keys = multi.apply(configuration_key, axis=1)
    found = []
    for key in sorted(set(keys)):
        part = multi[keys == key]
        rows = measured[measured["trial_id"].isin(part["trial_id"])]
        basis = straggler_basis(rows)
        by_rank = rows.groupby("rank")[basis]
        slowest = int(by_rank.median().idxmax())
        mine = rows.loc[rows["rank"] == slowest, basis].astype(float)
        others = rows.loc[rows["rank"] != slowest, basis].astype(float)
        costs = per_trial.loc[
            per_trial["trial_id"].isin(part["trial_id"]), ["others_wait_ms", "straggler_cost_fraction"]
        ]
        found.append(
            Straggler(
                tuple(part["trial_id"]),
                slowest,
                basis,
                float(mine.median() / others.median()) if others.median() > 0 else float("nan"),
                float(costs["others_wait_ms"].median()),
                float(costs["straggler_cost_fraction"].median()),
                bool((part["slow_ranks"].fillna("") != "").any()),
                compare(mine.tolist(), others.tolist()),
            )
        )
    return found
