"""The headline sentences: the few numbers a reader needs first, shared by report.md and summary.json."""

from __future__ import annotations

import pandas as pd

from analysis.compute import MIN_TIMED_STEPS, SweepAnalysis
from analysis.scaling import MIN_FIT_WORKER_COUNTS, ScalingResult
from analysis.stragglers import RATIO_WORTH_NAMING


def left_out_sentence(analysis: SweepAnalysis) -> str:
    data = analysis.data
    left = ", ".join(f"{count} {status}" for status, count in data.left_out.items()) or "none"
    return (
        f"{len(data.trials)} completed trial(s) analysed; left out (not measured to the end): {left}. "
        "Rows are compared only within groups that differ in the swept quantity alone."
    )


def spread(result: ScalingResult, metric: str, form: str) -> str:
    """`` (range a–b over k repeats)`` where the largest worker count was repeated; nothing otherwise."""
    if result.repeats_at_max < 2:
        return ""
    low, high = result.spread_at_max_workers(metric)
    return f" (range {format(low, form)}–{format(high, form)} over {result.repeats_at_max} repeats)"


def strong_finding(analysis: SweepAnalysis) -> str | None:
    result = analysis.best_strong()
    if result is None:
        return None
    top = result.at_max_workers()
    text = (
        f"Strong scaling ({result.group.id}, timed work): {top.speedup:.2f}×{spread(result, 'speedup', '.2f')} "
        f"speedup on {top.num_workers:g} workers vs {result.base_workers} ({top.efficiency:.0%} efficiency)"
    )
    fit = result.amdahl
    if fit is None:
        text += f"; no Amdahl fit: {result.worker_counts} worker count(s), a fit needs {MIN_FIT_WORKER_COUNTS}"
    else:
        bound = f", so speedup is bounded by 1/f = {fit.max_speedup:.1f}×" if fit.max_speedup else ""
        text += (
            f"; Amdahl serial fraction f = {fit.serial_fraction:.3f} (RMS residual {fit.rms_residual_s:.3g} s, "
            f"{fit.degrees_of_freedom} degree(s) of freedom){bound}"
        )
    return text + "."


def weak_finding(analysis: SweepAnalysis) -> str | None:
    result = analysis.best_weak()
    if result is None:
        return None
    top = result.at_max_workers()
    text = (
        f"Weak scaling ({result.group.id}, timed work): {top.efficiency:.0%}{spread(result, 'efficiency', '.0%')} "
        f"efficiency at {top.num_workers:g} workers vs {result.base_workers}, "
        f"{top.throughput_per_worker:.4g} samples/s per worker"
    )
    fit = result.gustafson
    if fit is None:
        text += f"; no Gustafson fit: {result.worker_counts} worker count(s), a fit needs {MIN_FIT_WORKER_COUNTS}"
    else:
        text += (
            f"; Gustafson serial fraction α = {fit.alpha:.3f} (RMS residual {fit.rms_residual:.3g}, "
            f"{fit.degrees_of_freedom} degree(s) of freedom), scaled speedup {top.gustafson_speedup:.2f}× "
            f"(measured {top.scaled_speedup:.2f}×)"
        )
    return text + "."


def batch_finding(analysis: SweepAnalysis) -> str | None:
    result = analysis.best_batch()
    if result is None:
        return None
    text = f"Batch size ({result.group.id}): {result.recommendation}"
    if result.knee_within_spread:
        text += "; the knee's and the peak's throughput overlap over repeats, so they are not told apart"
    elif not result.has_repeats:
        text += "; single runs per batch: differences within run-to-run noise (often 10–20%) are not established"
    return text + "."


def comm_finding(analysis: SweepAnalysis) -> str | None:
    """Exposed communication, only where some trial's step is measurably slower than its 1-rank match."""
    trials = analysis.per_trial.dropna(subset=["comm_exposed_ms", "step_time_ms"])
    if trials.empty or not (trials["comm_exposed_ms"] > 0).any():
        return None
    worst = trials.loc[trials["comm_exposed_ms"].idxmax()]
    return (
        f"Communication: a multi-rank step takes up to {worst.comm_exposed_ms:.3g} ms more than the same step on "
        f"one rank ({worst.comm_exposed_ms / worst.step_time_ms:.0%} of its {worst.step_time_ms:.3g} ms step; "
        f"trial {worst.trial_id}: {worst.num_workers:g} workers, micro batch {worst.micro_batch_per_worker:g})."
    )


def straggler_finding(analysis: SweepAnalysis) -> str | None:
    """The worst straggler, only where it stands out: slowed ranks set, or a ratio past noise."""
    lagging = analysis.stragglers
    slowed = set(analysis.data.trials.loc[analysis.data.trials["slow_ranks"].fillna("") != "", "trial_id"])
    lagging = lagging[lagging["trial_id"].isin(slowed) | (lagging["straggler_ratio"] >= RATIO_WORTH_NAMING)]
    if lagging.empty:
        return None
    worst = lagging.loc[lagging["straggler_ratio"].idxmax()]
    cost = f" ({worst.straggler_cost_fraction:.0%} of the step)" if pd.notna(worst.straggler_cost_fraction) else ""
    wait = (
        f"; the other ranks wait {worst.others_wait_ms:.3g} ms per step for it{cost}"
        if pd.notna(worst.others_wait_ms)
        else ""
    )
    return (
        f"Stragglers: worst in trial {worst.trial_id}, rank {worst.slowest_rank} is "
        f"{worst.straggler_ratio:.2f}× the median of the other ranks' {worst.straggler_basis}{wait}."
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
    texts = [text for text in (f(analysis) for f in findings) if text]
    return texts + caveats(analysis)


def caveats(analysis: SweepAnalysis) -> list[str]:
    """What the figures above rest on: short timings, timed seconds derived from an older table."""
    notes = []
    short = analysis.short_timed
    if not short.empty:
        notes.append(
            f"Warning: {len(short)} trial(s) timed fewer than {MIN_TIMED_STEPS} optimizer steps "
            f"({', '.join(short['trial_id'])}); their rates rest on few steps."
        )
    derived = analysis.per_trial["timed_source"] != "timed_s"
    if derived.any():
        notes.append(
            f"{int(derived.sum())} trial(s) come from a table without `timed_s`: timed seconds are derived "
            "as samples / throughput."
        )
    return notes
