"""Every metric of one sweep, computed from its measured rows; no files are written here."""

from __future__ import annotations

import json
from dataclasses import dataclass, field
from functools import cached_property

import pandas as pd

from analysis.metrics.accuracy import (
    DEFAULT_TARGET_SHARE,
    accuracy_points,
    check_target,
    clock_column,
    default_target,
    fastest_verdict,
    time_to_accuracy,
)
from analysis.metrics.batch import BatchResult, batch_analysis
from analysis.metrics.communication import exposed_by_configuration, exposed_communication
from analysis.metrics.scaling import ScalingResult, scaling_analysis
from analysis.metrics.stragglers import stragglers, stragglers_by_configuration
from analysis.metrics.tuned import TunedResult, tuned_analysis
from analysis.prediction.predict import report_predictions
from analysis.rows.evidence import Family, Verdict
from analysis.rows.groups import (
    BATCH,
    COMPARISONS,
    NOT_A_DIFFERENCE,
    STRONG,
    WEAK,
    Group,
    find_groups,
    group_column,
    trial_params,
)
from analysis.rows.load import SweepData

TRIAL_COLUMNS = [
    "trial_id",
    "model",
    "data_scaling",
    "num_workers",
    "sequence_parallel",
    "tensor_parallel",
    "micro_batch_per_worker",
    "grad_accum_steps",
    "global_batch",
    "seed",
    "repeat",
    "train_time_s",
    "warmup_s",
    "timed_steps",
    "timed_s",
    "timed_samples",
    "timed_source",
    "throughput",
    "throughput_per_worker",
    "step_time_ms",
    "comm_kernel_ms",
    "comm_overlap",
    "allreduce_probe_ms",
    "data_wait_fraction",
    "peak_mem_gib",
    "mfu",
    "joules_per_sample",
    "final_loss",
    "val_accuracy",
]
MIN_TIMED_STEPS = 5  # fewer timed optimizer steps than this make a rate that one slow step can move


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

    sequence_parallel: pd.DataFrame  # SP trials beside data parallelism alone at the same worker count
    tuned: list[TunedResult] = field(default_factory=list)  # accuracy vs batch with the learning rate searched

    @cached_property
    def predictions(self) -> pd.DataFrame:
        """``analysis.prediction.predict.report_predictions`` of the sweep, made once for the report's table and
        figure."""
        return report_predictions(self.data.sweep_dir, self.data.trials)

    @cached_property
    def family(self) -> Family:
        """Every comparison the report makes, for Holm's procedure over them (``analysis.rows.evidence.Family``)."""
        return Family(self.comparisons())

    def comparisons(self) -> list[Verdict]:
        """The verdicts the report states or counts: each scaling group's, the headline batch group's, every
        multi-rank configuration's exposed communication and slowest rank, the tuned searches' declines and the
        two points fastest to the target accuracy."""
        found = [r.faster() for r in self.strong] + [r.per_worker_kept() for r in self.weak]
        batch = self.best_batch()
        if batch is not None:
            found += [v for v in (batch.throughput_gain(), batch.knee_below_peak(), batch.accuracy_change()) if v]
        found += [f.verdict for f in exposed_by_configuration(self.data.trials)]
        found += [f.verdict for f in stragglers_by_configuration(self.data.trials, self.data.ranks, self.stragglers)]
        found += [v for result in self.tuned for v in result.verdicts()]
        if self.target is not None and self.per_trial["time_to_accuracy_s"].notna().any():
            fastest = fastest_verdict(accuracy_points(self.per_trial, self.data.trials))
            found += [fastest] if fastest is not None else []
        return found

    @property
    def accuracy_clock(self) -> str:
        return clock_column(self.data.epochs)

    @property
    def comparable(self) -> bool:
        """Whether any group has two values of its swept quantity (otherwise the report shows trials only)."""
        return any(g.comparable for kind in self.groups.values() for g in kind)

    @property
    def short_timed(self) -> pd.DataFrame:
        """Trials that timed fewer than MIN_TIMED_STEPS optimizer steps."""
        return self.per_trial[self.per_trial["timed_steps"] < MIN_TIMED_STEPS]

    # The headline group is the one with the most points; max() keeps the first of equals.
    def best_strong(self) -> ScalingResult | None:
        return max(self.strong, key=lambda r: r.group.points, default=None)

    def best_weak(self) -> ScalingResult | None:
        return max(self.weak, key=lambda r: r.group.points, default=None)

    def best_batch(self) -> BatchResult | None:
        return max(self.batch, key=lambda r: (r.group.points, r.peak.throughput_per_worker), default=None)


def compute(data: SweepData, target: float | None = None) -> SweepAnalysis:
    """All analyses; a sweep without two comparable points gets its trials' figures and no comparison."""
    if target is not None:
        check_target(target)
    # throughput and scaling count the stopped trials' timed epochs too; accuracy and the per-trial table do not
    trials = data.measured.assign(comm_exposed_ms=exposed_communication(data.measured))
    groups = {c.kind: find_groups(trials, c) for c in COMPARISONS}
    strong = [scaling_analysis(trials, g) for g in groups[STRONG.kind] if g.comparable]
    weak = [scaling_analysis(trials, g) for g in groups[WEAK.kind] if g.comparable]
    batch = [batch_analysis(trials, g) for g in groups[BATCH.kind] if g.comparable]
    if data.epochs["val_accuracy"].notna().sum() == 0:
        target, source = None, "the epochs table has no validation accuracy for the completed trials"
    elif target is not None:
        source = "set with --target"
    else:
        target = default_target(data.epochs)
        source = f"{DEFAULT_TARGET_SHARE:.0%} of the best validation accuracy in the sweep"
    lagging = stragglers(trials, data.ranks)
    completed = trials[trials["trial_id"].isin(data.trials["trial_id"])]
    per_trial = per_trial_table(completed, data.epochs, groups, strong + weak, lagging, target)
    return SweepAnalysis(
        data,
        groups,
        strong,
        weak,
        batch,
        lagging,
        target,
        source,
        per_trial,
        sequence_parallel_pairs(trials),
        tuned_analysis(trials),
    )


def per_trial_table(
    trials: pd.DataFrame,
    epochs: pd.DataFrame,
    groups: dict[str, list[Group]],
    scaling: list[ScalingResult],
    lagging: pd.DataFrame,
    target: float | None,
) -> pd.DataFrame:
    table = trials[TRIAL_COLUMNS].copy()
    table["allreduce_probe_ms"] = table["allreduce_probe_ms"].fillna(trials["comm_time_ms"])  # its old name
    table.insert(table.columns.get_loc("comm_kernel_ms"), "comm_exposed_ms", trials["comm_exposed_ms"])
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
    reached = time_to_accuracy(list(trials["trial_id"]), epochs, target if target is not None else float("inf"))
    table = table.merge(reached, on="trial_id", how="left")
    table["target_accuracy"] = pd.Series(target, index=table.index, dtype=float)
    return table.sort_values(
        ["scaling_group", "batch_group", "num_workers", "micro_batch_per_worker", "trial_id"],
        na_position="last",
        ignore_index=True,
    )


# What differs between a sequence-parallel trial and data parallelism alone on the same workers: the split
# itself and the global batch (fewer data-parallel ranks), besides seeds and paths.
SP_MOVES = NOT_A_DIFFERENCE | {"sequence_parallel", "global_batch"}


def sequence_parallel_pairs(trials: pd.DataFrame) -> pd.DataFrame:
    """Each sequence-parallel configuration beside the data-parallel-only trials with the same other parameters and
    worker count: per-rank peak memory and throughput per GPU (medians over repeats)."""
    sp = trials["sequence_parallel"].fillna(1) > 1
    if not sp.any():
        return pd.DataFrame()

    def key(row: pd.Series) -> str:
        params = trial_params(row)
        return json.dumps(
            {k: v for k, v in params.items() if k not in SP_MOVES},
            sort_keys=True,
            default=str,
        )

    keys = trials.apply(key, axis=1)
    rows = []
    for text in sorted(set(keys[sp])):
        mine = trials[sp & (keys == text)]
        alone = trials[~sp & (keys == text)]
        rows.append(
            {
                "workers": int(mine["num_workers"].iloc[0]),
                "sequence_parallel": int(mine["sequence_parallel"].median()),
                "micro_batch_per_worker": int(mine["micro_batch_per_worker"].iloc[0]),
                "sp_peak_mem_gib": float(mine["peak_mem_gib"].median()),
                "dp_peak_mem_gib": float(alone["peak_mem_gib"].median()) if len(alone) else float("nan"),
                "sp_throughput_per_gpu": float(mine["throughput_per_worker"].median()),
                "dp_throughput_per_gpu": float(alone["throughput_per_worker"].median()) if len(alone) else float("nan"),
            }
        )
    return pd.DataFrame(rows)
