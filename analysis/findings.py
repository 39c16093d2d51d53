"""The headline sentences: the few numbers a reader needs first, shared by report.md and summary.json."""

from __future__ import annotations

import pandas as pd

from analysis.compute import SweepAnalysis


def left_out_sentence(analysis: SweepAnalysis) -> str:
    data = analysis.data
    left = ", ".join(f"{count} {status}" for status, count in data.left_out.items()) or "none"
    return (
        f"{len(data.trials)} completed trial(s) analysed; left out (not measured to the end): {left}. "
        "Rows are compared only within groups that differ in the swept quantity alone."
    )


def strong_finding(analysis: SweepAnalysis) -> str | None:
    result = analysis.best_strong()
    if result is None:
        return None
    top = result.at_max_workers()
    text = (
        f"Strong scaling ({result.group.id}): {top.speedup:.2f}× speedup on {top.num_workers:g} workers "
        f"vs {result.base_workers} ({top.efficiency:.0%} efficiency)"
    )
    fit = result.amdahl
    if fit is not None:
        bound = f", so speedup is bounded by 1/f = {fit.max_speedup:.1f}×" if fit.max_speedup else ""
        text += (
            f"; Amdahl serial fraction f = {fit.serial_fraction:.3f} "
            f"(RMS residual {fit.rms_residual_s:.3g} s over {fit.points} trials){bound}"
        )
    return text + "."


def weak_finding(analysis: SweepAnalysis) -> str | None:
    result = analysis.best_weak()
    if result is None:
        return None
    top = result.at_max_workers()
    text = (
        f"Weak scaling ({result.group.id}): {top.efficiency:.0%} efficiency at {top.num_workers:g} workers "
        f"vs {result.base_workers}, {top.throughput_per_worker:.4g} samples/s per worker"
    )
    if result.gustafson_alpha is not None:
        text += (
            f"; Gustafson serial fraction α = {result.gustafson_alpha:.3f}, "
            f"scaled speedup {top.gustafson_speedup:.2f}× (measured {top.scaled_speedup:.2f}×)"
        )
    return text + "."


def batch_finding(analysis: SweepAnalysis) -> str | None:
    result = analysis.best_batch()
    return None if result is None else f"Batch size ({result.group.id}): {result.recommendation}."


def comm_finding(analysis: SweepAnalysis) -> str | None:
    trials = analysis.per_trial.dropna(subset=["comm_fraction"])
    if trials.empty:
        return None
    worst = trials.loc[trials["comm_fraction"].idxmax()]
    return (
        f"Communication: the gradient all-reduce takes up to {worst.comm_fraction:.0%} of the step time "
        f"(trial {worst.trial_id}: {worst.num_workers:g} workers, micro batch {worst.micro_batch_per_worker:g}); "
        f"median {trials['comm_fraction'].median():.0%}."
    )


def straggler_finding(analysis: SweepAnalysis) -> str | None:
    lagging = analysis.stragglers
    if lagging.empty:
        return None
    worst = lagging.loc[lagging["straggler_ratio"].idxmax()]
    cost = f" ({worst.straggler_cost_fraction:.0%} of the step)" if pd.notna(worst.straggler_cost_fraction) else ""
    return (
        f"Stragglers: worst in trial {worst.trial_id}, rank {worst.slowest_rank} is "
        f"{worst.straggler_ratio:.2f}× the median rank's {worst.straggler_basis}; the other ranks wait "
        f"{worst.others_wait_ms:.3g} ms per step for it{cost}."
    )


def accuracy_finding(analysis: SweepAnalysis) -> str | None:
    if analysis.target is None:
        return None
    trials = analysis.per_trial
    reached = trials.dropna(subset=["time_to_accuracy_s"])
    missed = len(trials) - len(reached)
    if reached.empty:
        return f"Time to accuracy: no trial reached {analysis.target:.3f} validation accuracy."
    fastest = reached.loc[reached["time_to_accuracy_s"].idxmin()]
    return (
        f"Time to {analysis.target:.3f} validation accuracy: fastest trial {fastest.trial_id} in "
        f"{fastest.time_to_accuracy_s:.3g} s (epoch {fastest.epoch_reached}); {missed} of {len(trials)} "
        "trial(s) never reached it."
    )


def headlines(analysis: SweepAnalysis) -> list[str]:
    findings = (strong_finding, weak_finding, batch_finding, comm_finding, straggler_finding, accuracy_finding)
    return [text for text in (f(analysis) for f in findings) if text]
