"""Every metric of one sweep, computed from its measured rows; no files are written here."""

from __future__ import annotations

from dataclasses import dataclass

import pandas as pd

from analysis.accuracy import DEFAULT_TARGET_SHARE, check_target, default_target, time_to_accuracy
from analysis.batch import BatchResult, batch_analysis
from analysis.errors import AnalysisError
from analysis.groups import BATCH, COMPARISONS, STRONG, WEAK, Group, find_groups, group_column
from analysis.load import SweepData
from analysis.scaling import ScalingResult, strong_scaling, weak_scaling
from analysis.stragglers import stragglers

TRIAL_COLUMNS = [
    "trial_id",
    "model",
    "data_scaling",
    "num_workers",
    "micro_batch_per_worker",
    "global_batch",
    "train_time_s",
    "throughput",
    "throughput_per_worker",
    "step_time_ms",
    "comm_time_ms",
    "comm_fraction",
    "data_wait_fraction",
    "peak_mem_gib",
    "final_loss",
    "val_accuracy",
]


@dataclass
class SweepAnalysis:
    data: SweepData
    groups: dict[str, list[Group]]  # comparison kind -> its groups, comparable or not
    strong: list[ScalingResult]
    weak: list[ScalingResult]
    batch: list[BatchResult]
    stragglers: pd.DataFrame
    target: float | None
    target_source: str
    per_trial: pd.DataFrame  # one row per completed trial: group ids and derived metrics

    # The headline group is the one with the most points; max() keeps the first of equals.
    def best_strong(self) -> ScalingResult | None:
        return max(self.strong, key=lambda r: r.group.points, default=None)

    def best_weak(self) -> ScalingResult | None:
        return max(self.weak, key=lambda r: r.group.points, default=None)

    def best_batch(self) -> BatchResult | None:
        return max(self.batch, key=lambda r: (r.group.points, r.peak.throughput_per_worker), default=None)


def compute(data: SweepData, target: float | None = None) -> SweepAnalysis:
    """All analyses; raise ``AnalysisError`` when no group has two points to compare."""
    if target is not None:
        check_target(target)
    trials = data.trials
    groups = {c.kind: find_groups(trials, c) for c in COMPARISONS}
    if not any(g.comparable for kind in groups.values() for g in kind):
        raise AnalysisError(
            f"nothing to compare in {data.sweep_dir}: every group has a single point "
            f"({len(trials)} completed trial(s)); sweep num_workers or micro_batch_per_worker with the rest fixed"
        )
    strong = [strong_scaling(trials, g) for g in groups[STRONG.kind] if g.comparable]
    weak = [weak_scaling(trials, g) for g in groups[WEAK.kind] if g.comparable]
    batch = [batch_analysis(trials, g) for g in groups[BATCH.kind] if g.comparable]
    if data.epochs["val_accuracy"].notna().sum() == 0:
        target, source = None, "the epochs table has no validation accuracy for the completed trials"
    elif target is not None:
        source = "set with --target"
    else:
        target = default_target(data.epochs)
        source = f"{DEFAULT_TARGET_SHARE:.0%} of the best validation accuracy in the sweep"
    lagging = stragglers(trials, data.ranks)
    per_trial = per_trial_table(data, groups, strong + weak, lagging, target)
    return SweepAnalysis(data, groups, strong, weak, batch, lagging, target, source, per_trial)


def per_trial_table(
    data: SweepData,
    groups: dict[str, list[Group]],
    scaling: list[ScalingResult],
    lagging: pd.DataFrame,
    target: float | None,
) -> pd.DataFrame:
    trials = data.trials
    table = trials[TRIAL_COLUMNS].copy()
    table.insert(1, "scaling_group", group_column(trials, groups[STRONG.kind] + groups[WEAK.kind]))
    table.insert(2, "batch_group", group_column(trials, groups[BATCH.kind]))
    derived = ["speedup", "efficiency", "karp_flatt", "scaled_speedup", "gustafson_speedup"]
    metrics = pd.concat(
        [
            r.rows.assign(base_workers=r.base_workers).reindex(columns=["trial_id", "base_workers", *derived])
            for r in scaling
        ]
        or [pd.DataFrame(columns=["trial_id", "base_workers", *derived])],
        ignore_index=True,
    )
    metrics = metrics.astype({"base_workers": "Int64", **{c: float for c in derived}})
    table = table.merge(metrics, on="trial_id", how="left")
    table = table.merge(lagging.drop(columns=["ranks"]), on="trial_id", how="left")
    reached = time_to_accuracy(list(trials["trial_id"]), data.epochs, target if target is not None else float("inf"))
    table = table.merge(reached, on="trial_id", how="left")
    table["target_accuracy"] = pd.Series(target, index=table.index, dtype=float)
    return table.sort_values(
        ["scaling_group", "batch_group", "num_workers", "micro_batch_per_worker", "trial_id"],
        na_position="last",
        ignore_index=True,
    )
