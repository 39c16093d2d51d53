"""The headline sentences: the few numbers a reader needs first, shared by report.md and summary.json."""

from __future__ import annotations

import pandas as pd

from analysis.metrics.accuracy import accuracy_points, fastest_verdict
from analysis.metrics.batch import KNEE_FRACTION
from analysis.metrics.communication import exposed_by_configuration
from analysis.metrics.compute import MIN_TIMED_STEPS, SweepAnalysis
from analysis.metrics.scaling import MIN_FIT_WORKER_COUNTS, ScalingResult
from analysis.metrics.stragglers import stragglers_by_configuration
from analysis.metrics.tuned import explanation, supported
from analysis.report.best import best_finding
from analysis.rows.evidence import Family


def left_out_sentence(analysis: SweepAnalysis) -> str:
    data = analysis.data
    left = ", ".join(f"{count} {status}" for status, count in data.left_out.items()) or "none"
    rungs = "; ".join(f"{count} after epoch {epochs}" for epochs, count in data.stopped_at.items())
    stopped = (
        f" The sweep's scheduler stopped {sum(data.stopped_at.values())} trial(s): {rungs}; their timed epochs "
        "count for throughput, not for accuracy."
        if rungs
        else ""
    )
    return (
        f"{len(data.trials)} completed trial(s) analysed; left out (not measured to the end): {left}.{stopped} "
        "Rows are compared only within groups that differ in the swept quantity alone."
    )


def answer(analysis: SweepAnalysis) -> str:
    """The report's first sentence: the headline comparison's result and whether the rule establishes it."""
    batch, strong, weak = analysis.best_batch(), analysis.best_strong(), analysis.best_weak()
    if strong is not None:
        top = strong.at_max_workers()
        verdict = strong.faster()
        return (
            f"{top.num_workers:g} workers ran the timed work {top.speedup:.2f}× as fast as {strong.base_workers} "
            f"({top.efficiency:.0%} efficiency); that they are faster is {verdict.sentence(analysis.family)}."
        )
    if weak is not None:
        top = weak.at_max_workers()
        return (
            f"At {top.num_workers:g} workers each worker kept {top.efficiency:.0%} of the throughput it had at "
            f"{weak.base_workers}; that it does less is {weak.per_worker_kept().sentence(analysis.family)}."
        )
    if batch is not None:
        first, peak = batch.points.iloc[0], batch.peak
        gain = (
            f"{peak.throughput_per_worker / first.throughput_per_worker:.2f}× that of micro batch "
            f"{first.micro_batch_per_worker:g}, a gain {batch.throughput_gain().sentence(analysis.family)}"
        )
        if batch.knee.micro_batch_per_worker == peak.micro_batch_per_worker:
            return f"Throughput per worker is highest at micro batch {peak.micro_batch_per_worker:g}: {gain}."
        share = batch.knee.throughput_per_worker / peak.throughput_per_worker
        return (
            f"Micro batch {batch.knee.micro_batch_per_worker:g} reaches {share:.0%} of the best throughput per worker "
            f"(the knee: the smallest reaching {KNEE_FRACTION:.0%}); the best, at micro batch "
            f"{peak.micro_batch_per_worker:g}, is {gain}."
        )
    tuned = next((r.answer(analysis.family) for r in analysis.tuned if r.answer() is not None), None)
    if tuned is not None:
        both = supported(analysis.tuned, analysis.family)
        return tuned if both is None else f"{tuned} {both}"
    trials = len(analysis.data.trials)
    best = best_finding(analysis.data)
    if best is not None:
        return f"{trials} trial(s) measured; no two points differ in one swept quantity alone; {best.sentence()}"
    return f"{trials} trial(s) measured; no two points differ in one swept quantity alone, so nothing is compared."


def spread(result: ScalingResult, metric: str, form: str) -> str:
    """`` (range a–b over k repeats)`` where the largest worker count was repeated; nothing otherwise."""
    if result.repeats_at_max < 2:
        return ""
    low, high = result.spread_at_max_workers(metric)
    return f" (range {format(low, form)}–{format(high, form)} over {result.repeats_at_max} repeats)"


def scaling_finding(result: ScalingResult | None, family: Family) -> str | None:
    """Strong or weak scaling of one group: the ratio at the largest worker count, the rule's verdict (marked
    where it does not pass Holm's procedure over the report's ``family``), the fit."""
    if result is None:
        return None
    top = result.at_max_workers()
    workers = f"{top.num_workers:g} workers vs {result.base_workers}"
    if result.kind == "strong":
        text = (
            f"Strong scaling ({result.group.id}, timed work): {top.speedup:.2f}×{spread(result, 'speedup', '.2f')} "
            f"speedup on {workers} ({top.efficiency:.0%} efficiency); faster than {result.base_workers}: "
            f"{result.faster().sentence(family)}"
        )
    else:
        text = (
            f"Weak scaling ({result.group.id}, timed work): {top.efficiency:.0%}"
            f"{spread(result, 'efficiency', '.0%')} efficiency at {workers}, {top.throughput_per_worker:.4g} "
            f"samples/s per worker; less per worker than at {result.base_workers}: "
            f"{result.per_worker_kept().sentence(family)}"
        )
    return text + "; " + fit_sentence(result) + "."


def fit_sentence(result: ScalingResult) -> str:
    if result.amdahl is not None:
        fit = result.amdahl
        bound = f", so speedup is bounded by 1/f = {fit.max_speedup:.1f}×" if fit.max_speedup else ""
        return (
            f"Amdahl serial fraction f = {fit.serial_fraction:.3f} (RMS residual {fit.rms_residual_s:.3g} s, "
            f"{fit.degrees_of_freedom} degree(s) of freedom){bound}"
        )
    if result.gustafson is not None:
        fit, top = result.gustafson, result.at_max_workers()
        return (
            f"Gustafson serial fraction α = {fit.alpha:.3f} (RMS residual {fit.rms_residual:.3g}, "
            f"{fit.degrees_of_freedom} degree(s) of freedom), scaled speedup {top.gustafson_speedup:.2f}× "
            f"(measured {top.scaled_speedup:.2f}×)"
        )
    law = "Amdahl" if result.kind == "strong" else "Gustafson"
    return f"no {law} fit: {result.worker_counts} worker count(s), a fit needs {MIN_FIT_WORKER_COUNTS}"


def batch_finding(analysis: SweepAnalysis) -> str | None:
    result = analysis.best_batch()
    if result is None:
        return None
    first = result.points.iloc[0].micro_batch_per_worker
    text = (
        f"Batch size ({result.group.id}): {result.recommendation}; throughput per worker at micro batch "
        f"{result.peak.micro_batch_per_worker:g} above {first:g}: {result.throughput_gain().sentence(analysis.family)}"
    )
    knee = result.knee_below_peak()
    if knee is not None and result.peak.micro_batch_per_worker != first:
        text += f"; the peak above the knee: {knee.sentence(analysis.family)}"
    return text + "."


def comm_finding(analysis: SweepAnalysis) -> str | None:
    """Exposed communication: the multi-rank configuration whose step exceeds its 1-rank match the most,
    with the rule's verdict on the step times of their repeats."""
    found = exposed_by_configuration(analysis.data.trials)
    if not found:
        return None
    established = [f for f in found if f.verdict.established]
    worst = max(established or found, key=lambda f: f.exposed_ms)
    where = (
        f"{worst.num_workers} workers, micro batch {worst.micro_batch_per_worker}, "
        f"{worst.grad_accum_steps} accumulation step(s)"
    )
    if not established:
        return (
            f"Communication: no multi-rank step is established slower than the same step on one rank "
            f"(largest: {worst.exposed_ms:.3g} ms at {where}: {worst.verdict.sentence(analysis.family)})."
        )
    return (
        f"Communication: a {where} step takes {worst.exposed_ms:.3g} ms more than the same step on one rank "
        f"({worst.share:.0%} of its {worst.step_time_ms:.3g} ms step; {len(established)} of {len(found)} "
        f"multi-rank configuration(s) established slower); {worst.verdict.sentence(analysis.family)}."
    )


def straggler_finding(analysis: SweepAnalysis) -> str | None:
    """The slowest rank of the configuration where it stands out most, with the rule's verdict against the others;
    nothing where no rank is established slower and none was slowed on purpose (``slow_ranks``)."""
    found = stragglers_by_configuration(analysis.data.trials, analysis.data.ranks, analysis.stragglers)
    if not found:
        return None
    established = [f for f in found if f.verdict.established]
    if not established and not any(f.slowed for f in found):
        return None  # no rank stands out and none was slowed on purpose: nothing to say
    worst = max(established or [f for f in found if f.slowed], key=lambda f: f.ratio)
    slowed = " (slowed on purpose: slow_ranks)" if worst.slowed else ""
    cost = f" ({worst.cost_fraction:.0%} of the step)" if pd.notna(worst.cost_fraction) else ""
    wait = (
        f"; the other ranks wait {worst.others_wait_ms:.3g} ms per step for it{cost}"
        if pd.notna(worst.others_wait_ms)
        else ""
    )
    what = (
        f"rank {worst.rank}{slowed} is {worst.ratio:.2f}× the median of the other ranks' {worst.basis} over "
        f"{len(worst.trial_ids)} trial(s) ({', '.join(worst.trial_ids)})"
    )
    if not established:
        return (
            "Stragglers: no rank is established slower than the others; "
            f"largest: {what}; {worst.verdict.sentence(analysis.family)}."
        )
    return f"Stragglers: {what}; slower than the others: {worst.verdict.sentence(analysis.family)}{wait}."


def trained(point) -> str:
    """``; trained N epochs, ...``: the budget an accuracy point's trials had in all (empty where not recorded)."""
    return f"; trained {point.budget.text()}" if point.budget is not None else ""


def accuracy_finding(analysis: SweepAnalysis) -> str | None:
    if analysis.target is None:
        return None
    trials = analysis.per_trial
    reached = trials.dropna(subset=["time_to_accuracy_s"])
    missed = len(trials) - len(reached)
    if reached.empty:
        return f"Time to accuracy: no trial reached {analysis.target:.3f} validation accuracy."
    points = accuracy_points(trials, analysis.data.trials)
    fastest = points[0]
    text = (
        f"Time to {analysis.target:.3f} validation accuracy: fastest point {fastest.label}, median "
        f"{fastest.median_s:.3g} s ({len(fastest.times_s)} of {fastest.repeats} repeat(s) reached it"
        f"{trained(fastest)})"
    )
    verdict = fastest_verdict(points)
    if verdict is None:
        text += ", the only point that reached it"
    else:
        text += (
            f"; before the next, {points[1].label} (median {points[1].median_s:.3g} s{trained(points[1])}): "
            f"{verdict.sentence(analysis.family)}"
        )
    return text + f"; {missed} of {len(trials)} trial(s) never reached it."


def headlines(analysis: SweepAnalysis) -> list[str]:
    texts = [
        scaling_finding(analysis.best_strong(), analysis.family),
        scaling_finding(analysis.best_weak(), analysis.family),
        *(f(analysis) for f in (batch_finding, comm_finding, straggler_finding, accuracy_finding)),
        *(result.finding(analysis.family) for result in analysis.tuned),
        explanation(analysis.tuned, analysis.family),
    ]
    return [text for text in texts if text] + caveats(analysis)


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
