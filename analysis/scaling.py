"""Strong and weak scaling metrics of one group: speedup, efficiency, Karp–Flatt, Amdahl and Gustafson fits."""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np
import pandas as pd

from analysis.groups import Group

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
    group: Group
    base_workers: int
    rows: pd.DataFrame  # one row per trial: trial_id, num_workers, timed_s, timed_samples and the derived metrics
    amdahl: AmdahlFit | None = None  # strong scaling, with enough worker counts
    gustafson: GustafsonFit | None = None  # weak scaling, with enough worker counts

    @property
    def base_is_one(self) -> bool:
        return self.base_workers == 1

    @property
    def worker_counts(self) -> int:
        return int(self.rows["num_workers"].nunique())

    @property
    def gustafson_alpha(self) -> float | None:
        return self.gustafson.alpha if self.gustafson else None

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


def strong_scaling(trials: pd.DataFrame, group: Group) -> ScalingResult:
    """Speedup S = R(n)/R(base) of the timed rates R = timed samples / timed s, E = S * base / n, Karp–Flatt, Amdahl.

    With a fixed number of samples, the rate ratio is the ratio of timed seconds T(base)/T(n); the
    Amdahl fit runs on the timed seconds the group's median sample count takes at each trial's rate.
    """
    rows, base, base_rate = timed_rows(trials, group)
    relative = rows["num_workers"] / base
    rows["speedup"] = rows["timed_rate"] / base_rate
    rows["efficiency"] = rows["speedup"] / relative
    rows["karp_flatt"] = [karp_flatt(s, p) for s, p in zip(rows["speedup"], relative)]
    rows["karp_flatt"] = rows["karp_flatt"].astype(float)
    samples = float(rows["timed_samples"].median())
    fit = amdahl_fit(rows["num_workers"].to_numpy(), (samples / rows["timed_rate"]).to_numpy())
    return ScalingResult(group, base, rows, amdahl=fit)


def weak_scaling(trials: pd.DataFrame, group: Group) -> ScalingResult:
    """Scaled speedup R(n)/R(base) at p = n / base; efficiency E = scaled speedup / p; Gustafson fit."""
    rows, base, base_rate = timed_rows(trials, group)
    relative = rows["num_workers"] / base
    rows["scaled_speedup"] = rows["timed_rate"] / base_rate
    rows["efficiency"] = rows["scaled_speedup"] / relative
    fit = gustafson_fit(relative.to_numpy(), rows["scaled_speedup"].to_numpy())
    rows["gustafson_speedup"] = relative - fit.alpha * (relative - 1) if fit is not None else np.nan
    return ScalingResult(group, base, rows, gustafson=fit)
