"""Batch-size analysis of one group: throughput per worker, overheads and accuracy against the micro batch."""

from __future__ import annotations

from dataclasses import dataclass

import pandas as pd

from analysis.rows.budget import Budget, budget_of
from analysis.rows.evidence import Verdict, compare, differ
from analysis.rows.groups import Group

KNEE_FRACTION = 0.9  # the knee is the smallest batch within this share of the best throughput
POINT_METRICS = (
    "global_batch",
    "throughput_per_worker",
    "peak_mem_gib",
    "comm_exposed_ms",
    "step_time_ms",
    "data_wait_fraction",
    "val_accuracy",
    "final_loss",
    "mfu",
    "joules_per_sample",
)


@dataclass
class BatchResult:
    group: Group
    points: pd.DataFrame  # one row per micro batch, metrics averaged over its trials
    knee: pd.Series  # the point at the knee
    peak: pd.Series  # the point with the best throughput per worker
    rows: pd.DataFrame  # the group's trials, repeats included

    def at(self, micro_batch: float, metric: str) -> list[float]:
        """``metric`` of every repeat at ``micro_batch``."""
        return self.rows.loc[self.rows["micro_batch_per_worker"] == micro_batch, metric].astype(float).tolist()

    def throughput_gain(self) -> Verdict:
        """The rule on throughput per worker: the peak's repeats against the smallest micro batch's."""
        first = self.points.iloc[0].micro_batch_per_worker
        return differ(
            self.at(self.peak.micro_batch_per_worker, "throughput_per_worker"), self.at(first, "throughput_per_worker")
        )

    def knee_below_peak(self) -> Verdict | None:
        """The rule on throughput per worker between the knee and the peak; None where they are one point."""
        if self.knee.micro_batch_per_worker == self.peak.micro_batch_per_worker:
            return None
        peak, knee = self.peak.micro_batch_per_worker, self.knee.micro_batch_per_worker
        return differ(self.at(peak, "throughput_per_worker"), self.at(knee, "throughput_per_worker"))

    def accuracy_change(self) -> Verdict | None:
        """The rule on validation accuracy between the smallest and the largest micro batch; None without it."""
        first, last = self.points.iloc[0].micro_batch_per_worker, self.points.iloc[-1].micro_batch_per_worker
        a, b = self.at(first, "val_accuracy"), self.at(last, "val_accuracy")
        if not any(pd.notna(a)) or not any(pd.notna(b)):
            return None
        return differ(a, b)

    def budget(self, micro_batch: float) -> Budget | None:
        """What the trials at ``micro_batch`` trained on: epochs, optimizer steps, samples."""
        return budget_of(self.rows[self.rows["micro_batch_per_worker"] == micro_batch])

    def budgets(self, *micro_batches: float) -> str:
        """``micro batch A: E epochs, S optimizer steps, N samples; B: ...`` (empty where steps are not recorded)."""
        found = [(b, self.budget(b)) for b in micro_batches]
        return "; ".join(f"micro batch {b:g}: {budget.text()}" for b, budget in found if budget is not None)

    @property
    def memory(self) -> str:
        """What ``peak_mem_gib`` measured: a GPU rank's device memory, a CPU rank's process (resident) memory."""
        devices = set(self.rows["device"]) if "device" in self.rows else set()
        return {frozenset({"gpu"}): "GPU memory", frozenset({"cpu"}): "process (resident) memory"}.get(
            frozenset(devices), "memory"
        )

    @property
    def recommendation(self) -> str:
        knee, peak = self.knee, self.peak
        text = (
            f"micro batch {knee.micro_batch_per_worker:g} (global batch {knee.global_batch:g}): "
            f"{knee.throughput_per_worker / peak.throughput_per_worker:.0%} of peak throughput per worker "
            f"({knee.throughput_per_worker:.4g} vs {peak.throughput_per_worker:.4g} samples/s "
            f"at micro batch {peak.micro_batch_per_worker:g})"
        )
        if pd.notna(knee.peak_mem_gib) and pd.notna(peak.peak_mem_gib) and peak.peak_mem_gib > 0:
            text += (
                f" at {knee.peak_mem_gib / peak.peak_mem_gib:.0%} of the peak-throughput batch's {self.memory} "
                f"({knee.peak_mem_gib:.3g} of {peak.peak_mem_gib:.3g} GiB)"
            )
        return text + "".join(f"; {cost}" for cost in self.costs())

    def costs(self) -> list[str]:
        """What the knee gives up against the group's best point of validation accuracy (highest) and of peak
        memory (least), each under the report's rule over their repeats; nothing where the knee is that point."""
        out = []
        knee = self.knee.micro_batch_per_worker
        for metric, mode, what, form in (
            ("val_accuracy", "max", "validation accuracy", ".3f"),
            ("peak_mem_gib", "min", "peak memory", ".3g"),
        ):
            measured = self.points[self.points[metric].notna()]
            if measured.empty or pd.isna(self.knee[metric]):
                continue
            best = measured.loc[measured[metric].idxmax() if mode == "max" else measured[metric].idxmin()]
            unit = " GiB" if metric == "peak_mem_gib" else ""
            if best.micro_batch_per_worker == knee or best[metric] == self.knee[metric]:
                out.append(f"its {what} {self.knee[metric]:{form}}{unit} is the group's best")
                continue
            mine, theirs = self.at(knee, metric), self.at(best.micro_batch_per_worker, metric)
            verdict = compare(theirs, mine) if mode == "max" else compare(mine, theirs)
            side, word = ("below", "lower") if mode == "max" else ("above", "higher")
            trained = self.budgets(knee, best.micro_batch_per_worker) if metric == "val_accuracy" else ""
            out.append(
                f"its {what} {self.knee[metric]:{form}}{unit} is {side} {best[metric]:{form}}{unit} at micro batch "
                f"{best.micro_batch_per_worker:g} ({word}: {verdict.sentence()}{'; ' + trained if trained else ''})"
            )
        return out


def batch_points(trials: pd.DataFrame, group: Group) -> pd.DataFrame:
    rows = trials[trials["trial_id"].isin(group.trial_ids)]
    # Repeats (other seeds) of one micro batch: the median, with the spread of the throughput beside it.
    by_batch = rows.groupby("micro_batch_per_worker")
    points = by_batch[list(POINT_METRICS)].median()
    points["throughput_min"] = by_batch["throughput_per_worker"].min()
    points["throughput_max"] = by_batch["throughput_per_worker"].max()
    points["trials"] = by_batch.size()
    return points.reset_index().sort_values("micro_batch_per_worker", ignore_index=True)


def knee_index(throughput: pd.Series, fraction: float = KNEE_FRACTION) -> int:
    """Index of the first point (points sorted by batch) reaching ``fraction`` of the best throughput."""
    return int((throughput >= fraction * throughput.max()).to_numpy().argmax())


def batch_analysis(trials: pd.DataFrame, group: Group) -> BatchResult:
    points = batch_points(trials, group)
    knee = points.iloc[knee_index(points["throughput_per_worker"])]
    peak = points.loc[points["throughput_per_worker"].idxmax()]
    return BatchResult(group, points, knee, peak, trials[trials["trial_id"].isin(group.trial_ids)])
