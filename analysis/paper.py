"""The paper beside us: where a sweep repeats one of its experiments, the paper's finding next to ours.

Paper: "Scaling Vision Transformers: Evaluating DeepSpeed for Image-Centric Workloads". Its findings are
paraphrased as the paper reports them; ours are computed from this sweep's tables.
"""

from __future__ import annotations

from analysis.compute import SweepAnalysis


def strong_line(analysis: SweepAnalysis) -> str | None:
    result = analysis.best_strong()
    if result is None:
        return None
    top = result.at_max_workers()
    return (
        f"Strong scaling. Paper: going from 1 to 2 GPUs roughly halves the training time. "
        f"Here: {top.speedup:.2f}× from {result.base_workers} to {top.num_workers:g} workers "
        f"({top.efficiency:.0%} efficient, timed work)."
    )


def weak_line(analysis: SweepAnalysis) -> str | None:
    result = analysis.best_weak()
    if result is None:
        return None
    top = result.at_max_workers()
    return (
        f"Weak scaling. Paper: throughput grows with the GPUs while the work per GPU is fixed, short of linear as "
        f"communication grows. Here: {top.scaled_speedup:.2f}× the throughput at {top.num_workers:g} workers "
        f"vs {result.base_workers} ({top.efficiency:.0%} efficient)."
    )


def batch_line(analysis: SweepAnalysis) -> str | None:
    result = analysis.best_batch()
    if result is None:
        return None
    points = result.points
    first, best = points.iloc[0], result.peak
    line = (
        f"Batch size. Paper: larger batches raise throughput until communication or memory limits it. "
        f"Here: {best.throughput_per_worker / first.throughput_per_worker:.2f}× the throughput per worker from "
        f"micro batch {first.micro_batch_per_worker:g} to {best.micro_batch_per_worker:g}"
    )
    last = points.iloc[-1]
    if best.micro_batch_per_worker != last.micro_batch_per_worker:
        line += f", no gain beyond it (micro batch {last.micro_batch_per_worker:g}: {last.throughput_per_worker:.4g}/s)"
    accuracy = points.dropna(subset=["val_accuracy"])
    if len(accuracy) >= 2:
        line += (
            f"; validation accuracy {accuracy.iloc[0].val_accuracy:.3f} at micro batch "
            f"{accuracy.iloc[0].micro_batch_per_worker:g} vs {accuracy.iloc[-1].val_accuracy:.3f} at "
            f"{accuracy.iloc[-1].micro_batch_per_worker:g} (the paper reports accuracy falling at large batch)"
        )
    return line + "."


def accumulation_line(analysis: SweepAnalysis) -> str | None:
    trials = analysis.per_trial.dropna(subset=["comm_exposed_ms", "step_time_ms"])
    if trials["grad_accum_steps"].nunique() < 2:
        return None
    share = (trials["comm_exposed_ms"] / trials["step_time_ms"]).groupby(trials["grad_accum_steps"]).median()
    low, high = share.index.min(), share.index.max()
    return (
        f"Gradient accumulation. Paper: accumulating gradients lowers the share of time spent communicating. "
        f"Here: exposed communication is {share[low]:.0%} of the step at {low:g} accumulation step(s) and "
        f"{share[high]:.0%} at {high:g}."
    )


def heterogeneity_line(analysis: SweepAnalysis) -> str | None:
    slowed = analysis.data.trials.loc[analysis.data.trials["slow_ranks"].fillna("") != "", "trial_id"]
    lagging = analysis.stragglers[analysis.stragglers["trial_id"].isin(slowed)]
    if lagging.empty:
        return None
    worst = lagging.loc[lagging["straggler_ratio"].idxmax()]
    return (
        f"Heterogeneous devices. Paper: a slower GPU drags the whole synchronous group to its pace. "
        f"Here: the slowest rank is {worst.straggler_ratio:.2f}× the others' busy time in trial {worst.trial_id}."
    )


def paper_beside_us(analysis: SweepAnalysis) -> list[str]:
    """One sentence per experiment of the paper that this sweep repeats; [] where it repeats none."""
    lines = (strong_line, weak_line, batch_line, accumulation_line, heterogeneity_line)
    return [text for text in (f(analysis) for f in lines) if text]
