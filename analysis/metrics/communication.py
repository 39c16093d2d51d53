"""Exposed communication: what an N-rank step costs beyond the same step on one rank."""

from __future__ import annotations

from dataclasses import dataclass

import pandas as pd

from analysis.rows.evidence import Verdict, compare
from analysis.rows.groups import step_key


def exposed_communication(trials: pd.DataFrame) -> pd.Series:
    """``comm_exposed_ms`` per trial: step time minus the median step time of its matching 1-rank trials.

    NULL for 1-rank trials and where no 1-rank trial ran the same step.
    """
    keys = trials.apply(step_key, axis=1) if len(trials) else pd.Series(dtype=object)
    single = trials["num_workers"] == 1
    baseline = trials.loc[single, "step_time_ms"].groupby(keys[single]).median()
    exposed = trials["step_time_ms"] - keys.map(baseline).astype(float)
    return exposed.where(~single & trials["step_time_ms"].notna()).astype(float).rename("comm_exposed_ms")


@dataclass(frozen=True)
class ExposedCommunication:
    """One worker count's step against the same per-rank step on one rank, over their repeats."""

    num_workers: int
    micro_batch_per_worker: int
    grad_accum_steps: int
    step_time_ms: float  # median over the N-rank repeats
    exposed_ms: float  # that median minus the 1-rank repeats' median
    verdict: Verdict  # the N-rank step times against the 1-rank ones

    @property
    def share(self) -> float:
        return self.exposed_ms / self.step_time_ms if self.step_time_ms > 0 else float("nan")


def exposed_by_configuration(trials: pd.DataFrame) -> list[ExposedCommunication]:
    """Every multi-rank configuration with a 1-rank match, its repeats' step times tested against the match's."""
    if trials.empty:
        return []
    keys = trials.apply(step_key, axis=1)
    single = trials["num_workers"] == 1
    found = []
    for key in sorted(set(keys[~single])):
        base = trials.loc[single & (keys == key), "step_time_ms"].dropna()
        if base.empty:
            continue
        for workers, part in trials[~single & (keys == key)].groupby("num_workers"):
            steps = part["step_time_ms"].dropna()
            if steps.empty:
                continue
            found.append(
                ExposedCommunication(
                    int(workers),
                    int(part["micro_batch_per_worker"].iloc[0]),
                    int(part["grad_accum_steps"].fillna(1).iloc[0]),
                    float(steps.median()),
                    float(steps.median() - base.median()),
                    compare(steps.tolist(), base.tolist()),
                )
            )
    return found
