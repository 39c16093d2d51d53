"""Strong and weak scaling metrics of one group: speedup, efficiency, Karp–Flatt, Amdahl and Gustafson fits."""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np
import pandas as pd

from analysis.rows.evidence import Verdict, differ
from analysis.rows.groups import Group

MIN_FIT_WORKER_COUNTS = 3  # a two-parameter curve through two worker counts is exact and shows nothing


@dataclass
class AmdahlFit:
    """T(n) = T1 * (f + (1 - f) / n) of the timed seconds per sample, fitted by least squares as T(n) = a + c / n."""

    serial_fraction: float
    t1_s: float  # one-worker timed seconds for the group's samples the fit predicts (measured or extrapolated)
    rms_residual_s: float
    points: int
    degrees_of_freedom: int

    @property
    def max_speedup(self) -> float | None:
        return 1 / self.serial_fraction if self.serial_fraction > 0 else None


@dataclass
class GustafsonFit:
    """S(p) = p - alpha (p - 1) through the measured scaled speedups, by least squares in alpha."""

    alpha: float
    rms_residual: float
    points: int
    degrees_of_freedom: int


@dataclass
class ScalingResult:
    """One strong- or weak-scaling group: the rate ratio R(n) / R(base) per trial, its efficiency and fit."""

    group: Group
    base_workers: int
    rows: pd.DataFrame  # one row per trial: trial_id, num_workers, timed_s, timed_samples and the derived metrics
    amdahl: AmdahlFit | None = None  # strong scaling, with enough worker counts
    gustafson: GustafsonFit | None = None  # weak scaling, with enough worker counts

    @property
    def kind(self) -> str:
        return self.group.comparison.kind

    @property
    def ratio(self) -> str:
        """The column of R(n) / R(base): ``speedup`` (strong) or ``scaled_speedup`` (weak)."""
        return RATIO_COLUMN[self.kind]

    @property
    def base_is_one(self) -> bool:
        return self.base_workers == 1

    @property
    def worker_counts(self) -> int:
        return int(self.rows["num_workers"].nunique())

    @property
    def gustafson_alpha(self) -> float | None:
        return self.gustafson.alpha if self.gustafson else None

    @property
    def has_fit(self) -> bool:
        return (self.amdahl or self.gustafson) is not None

    def fitted_ratio(self, workers: np.ndarray) -> np.ndarray | None:
        """The fitted R(n) / R(base) at ``workers`` (Amdahl's speedup, Gustafson's line); None without a fit."""
        p = np.asarray(workers, float) / self.base_workers
        if self.amdahl is not None:
            f = self.amdahl.serial_fraction
            return (f + (1 - f) / self.base_workers) / (f + (1 - f) / (p * self.base_workers))
        if self.gustafson is not None:
            return p - self.gustafson.alpha * (p - 1)
        return None

    def at_max_workers(self) -> pd.Series:
        """The median of each metric over the trials (repeats) with the largest worker count."""
        top = self.rows[self.rows["num_workers"] == self.rows["num_workers"].max()]
        return top.median(numeric_only=True)

    def spread_at_max_workers(self, metric: str) -> tuple[float, float]:
        """Lowest and highest value of ``metric`` over the repeats at the largest worker count."""
        top = self.rows.loc[self.rows["num_workers"] == self.rows["num_workers"].max(), metric]
        return float(top.min()), float(top.max())

    @property
    def repeats_at_max(self) -> int:
        return int((self.rows["num_workers"] == self.rows["num_workers"].max()).sum())

    def at(self, workers: int, metric: str) -> list[float]:
        return self.rows.loc[self.rows["num_workers"] == workers, metric].astype(float).tolist()

    def faster(self) -> Verdict:
        """The rule on the timed rates: the largest worker count's repeats against the base's."""
        return differ(
            self.at(int(self.rows["num_workers"].max()), "timed_rate"), self.at(self.base_workers, "timed_rate")
        )

    def per_worker_kept(self) -> Verdict:
        """The rule on the rate per worker: the base's repeats against the largest worker count's (a loss of
        efficiency is established when every base repeat does more per worker)."""
        top = int(self.rows["num_workers"].max())
        base = [r / self.base_workers for r in self.at(self.base_workers, "timed_rate")]
        return differ(base, [r / top for r in self.at(top, "timed_rate")])


RATIO_COLUMN = {"strong": "speedup", "weak": "scaled_speedup"}


def amdahl_fit(workers: np.ndarray, times: np.ndarray) -> AmdahlFit | None:
    """Least-squares Amdahl fit; None with fewer than MIN_FIT_WORKER_COUNTS distinct worker counts.

    T = a + c/n is linear in (a, c), so ordinary least squares gives the exact optimum without
    starting values; then T1 = a + c and f = a / T1.
    """
    workers, times = np.asarray(workers, float), np.asarray(times, float)
    if len(np.unique(workers)) < MIN_FIT_WORKER_COUNTS:
        return None
    design = np.column_stack([np.ones_like(workers), 1 / workers])
    (serial_s, parallel_s), *_ = np.linalg.lstsq(design, times, rcond=None)
    residuals = times - design @ np.array([serial_s, parallel_s])
    t1 = serial_s + parallel_s
    return AmdahlFit(float(serial_s / t1), float(t1), float(np.sqrt(np.mean(residuals**2))), len(times), len(times) - 2)


def karp_flatt(speedup: float, relative_workers: float) -> float | None:
    """Experimentally determined serial fraction e = (1/S - 1/p) / (1 - 1/p); undefined at p = 1."""
    if relative_workers == 1 or not np.isfinite(speedup) or speedup <= 0:
        return None
    return (1 / speedup - 1 / relative_workers) / (1 - 1 / relative_workers)


def gustafson_fit(relative_workers: np.ndarray, scaled_speedup: np.ndarray) -> GustafsonFit | None:
    """Least-squares alpha of S = p - alpha (p - 1); None with fewer than MIN_FIT_WORKER_COUNTS distinct counts."""
    relative = np.asarray(relative_workers, float)
    if len(np.unique(relative)) < MIN_FIT_WORKER_COUNTS:
        return None
    excess = relative - 1
    shortfall = relative - np.asarray(scaled_speedup, float)
    alpha = float(np.sum(excess * shortfall) / np.sum(excess**2))
    residuals = shortfall - alpha * excess
    return GustafsonFit(alpha, float(np.sqrt(np.mean(residuals**2))), len(relative), len(relative) - 1)


def timed_rows(trials: pd.DataFrame, group: Group) -> tuple[pd.DataFrame, int, float]:
    """The group's rows, the base worker count and the base's median timed rate (samples per timed second)."""
    columns = [
        "trial_id",
        "num_workers",
        "timed_s",
        "timed_samples",
        "timed_source",
        "warmup_s",
        "timed_rate",
        "throughput_per_worker",
    ]
    rows = trials.loc[trials["trial_id"].isin(group.trial_ids), columns].sort_values(["num_workers", "trial_id"])
    rows = rows.astype({"num_workers": int})
    base = int(rows["num_workers"].min())
    return rows.reset_index(drop=True), base, float(rows.loc[rows["num_workers"] == base, "timed_rate"].median())


def scaling_analysis(trials: pd.DataFrame, group: Group) -> ScalingResult:
    """The ratio R(n) / R(base) of the timed rates R = timed samples / timed s at p = n / base, and E = ratio / p.

    Strong scaling (a fixed job) calls the ratio speedup, adds Karp–Flatt and fits Amdahl to the timed
    seconds the group's median sample count takes at each trial's rate (with a fixed number of samples the
    rate ratio is T(base) / T(n)); weak scaling (the job grows with the workers) calls it the scaled speedup
    and fits Gustafson's S = p - alpha (p - 1).
    """
    rows, base, base_rate = timed_rows(trials, group)
    relative = rows["num_workers"] / base
    result = ScalingResult(group, base, rows)
    rows[result.ratio] = rows["timed_rate"] / base_rate
    rows["efficiency"] = rows[result.ratio] / relative
    if result.kind == "strong":
        rows["karp_flatt"] = [karp_flatt(s, p) for s, p in zip(rows["speedup"], relative)]
        rows["karp_flatt"] = rows["karp_flatt"].astype(float)
        samples = float(rows["timed_samples"].median())
        result.amdahl = amdahl_fit(rows["num_workers"].to_numpy(), (samples / rows["timed_rate"]).to_numpy())
    else:
        result.gustafson = gustafson_fit(relative.to_numpy(), rows["scaled_speedup"].to_numpy())
        rows["gustafson_speedup"] = result.fitted_ratio(rows["num_workers"].to_numpy()) if result.gustafson else np.nan
    return result
