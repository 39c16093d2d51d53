"""Strong and weak scaling metrics of one group: speedup, efficiency, Karp–Flatt, Amdahl and Gustafson fits."""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np
import pandas as pd

from analysis.groups import Group


@dataclass
class AmdahlFit:
    """T(n) = T1 * (f + (1 - f) / n), fitted by linear least squares as T(n) = a + c / n."""

    serial_fraction: float
    t1_s: float  # one-worker time the fit predicts (measured or extrapolated)
    rms_residual_s: float
    points: int

    @property
    def max_speedup(self) -> float | None:
        return 1 / self.serial_fraction if self.serial_fraction > 0 else None


@dataclass
class ScalingResult:
    group: Group
    base_workers: int
    rows: pd.DataFrame  # one row per trial: trial_id, num_workers, train_time_s and the derived metrics
    amdahl: AmdahlFit | None = None  # strong scaling
    gustafson_alpha: float | None = None  # weak scaling

    @property
    def base_is_one(self) -> bool:
        return self.base_workers == 1

    def at_max_workers(self) -> pd.Series:
        """The mean of each metric over the trials with the largest worker count."""
        top = self.rows[self.rows["num_workers"] == self.rows["num_workers"].max()]
        return top.mean(numeric_only=True)


def amdahl_fit(workers: np.ndarray, times: np.ndarray) -> AmdahlFit | None:
    """Least-squares Amdahl fit; None with fewer than two distinct worker counts.

    T = a + c/n is linear in (a, c), so ordinary least squares gives the exact optimum without
    starting values; then T1 = a + c and f = a / T1.
    """
    workers, times = np.asarray(workers, float), np.asarray(times, float)
    if len(np.unique(workers)) < 2:
        return None
    design = np.column_stack([np.ones_like(workers), 1 / workers])
    (serial_s, parallel_s), *_ = np.linalg.lstsq(design, times, rcond=None)
    residuals = times - design @ np.array([serial_s, parallel_s])
    t1 = serial_s + parallel_s
    return AmdahlFit(float(serial_s / t1), float(t1), float(np.sqrt(np.mean(residuals**2))), len(times))


def karp_flatt(speedup: float, relative_workers: float) -> float | None:
    """Experimentally determined serial fraction e = (1/S - 1/p) / (1 - 1/p); undefined at p = 1."""
    if relative_workers == 1 or not np.isfinite(speedup) or speedup <= 0:
        return None
    return (1 / speedup - 1 / relative_workers) / (1 - 1 / relative_workers)


def gustafson_alpha(relative_workers: np.ndarray, scaled_speedup: np.ndarray) -> float | None:
    """Least-squares alpha of S = p - alpha (p - 1) through the measured scaled speedups; None without p > 1."""
    excess = np.asarray(relative_workers, float) - 1
    if not np.any(excess > 0):
        return None
    shortfall = np.asarray(relative_workers, float) - np.asarray(scaled_speedup, float)
    return float(np.sum(excess * shortfall) / np.sum(excess**2))


def timed_rows(trials: pd.DataFrame, group: Group) -> tuple[pd.DataFrame, int, float]:
    """The group's rows, the base worker count and the base's mean time."""
    columns = ["trial_id", "num_workers", "train_time_s", "throughput_per_worker"]
    rows = trials.loc[trials["trial_id"].isin(group.trial_ids), columns].sort_values(["num_workers", "trial_id"])
    rows = rows.astype({"num_workers": int})
    base = int(rows["num_workers"].min())
    return rows.reset_index(drop=True), base, float(rows.loc[rows["num_workers"] == base, "train_time_s"].mean())


def strong_scaling(trials: pd.DataFrame, group: Group) -> ScalingResult:
    """Speedup S = T(base)/T(n), efficiency E = S * base / n, Karp–Flatt e at p = n / base, Amdahl fit."""
    rows, base, base_time = timed_rows(trials, group)
    relative = rows["num_workers"] / base
    rows["speedup"] = base_time / rows["train_time_s"]
    rows["efficiency"] = rows["speedup"] / relative
    rows["karp_flatt"] = [karp_flatt(s, p) for s, p in zip(rows["speedup"], relative)]
    rows["karp_flatt"] = rows["karp_flatt"].astype(float)
    fit = amdahl_fit(rows["num_workers"].to_numpy(), rows["train_time_s"].to_numpy())
    return ScalingResult(group, base, rows, amdahl=fit)


def weak_scaling(trials: pd.DataFrame, group: Group) -> ScalingResult:
    """Efficiency E = T(base)/T(n); scaled speedup p * E at p = n / base; Gustafson S = p - alpha (p - 1)."""
    rows, base, base_time = timed_rows(trials, group)
    relative = rows["num_workers"] / base
    rows["efficiency"] = base_time / rows["train_time_s"]
    rows["scaled_speedup"] = relative * rows["efficiency"]
    alpha = gustafson_alpha(relative.to_numpy(), rows["scaled_speedup"].to_numpy())
    rows["gustafson_speedup"] = relative - alpha * (relative - 1) if alpha is not None else np.nan
    return ScalingResult(group, base, rows, gustafson_alpha=alpha)
