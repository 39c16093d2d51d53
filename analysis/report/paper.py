"""The paper beside us: where a sweep repeats one of its experiments, the paper's finding next to ours.

Paper: "Scaling Vision Transformers: Evaluating DeepSpeed for Image-Centric Workloads". Its findings are
paraphrased as the paper reports them; ours are computed from this sweep's tables, with the rule's verdict.
The first line says where this sweep's setup differs from the paper's (model, data, devices): a finding is
set beside the paper's, never counted as agreeing or disagreeing with it across other hardware or models.
"""

from __future__ import annotations

from dataclasses import dataclass

from analysis.metrics.compute import SweepAnalysis
from analysis.metrics.stragglers import stragglers_by_configuration
from analysis.report.setup import Setup
from analysis.rows.budget import fall_cause


@dataclass(frozen=True)
class PaperSetup:
    model: str = "vit_base_patch16_224"
    model_text: str = "ViT-B/16 (vit_base_patch16_224)"
    data: tuple[str, ...] = ("cifar10", "cifar100")
    data_text: str = "CIFAR images"
    device_kind: str = "gpu"
    device_text: str = "NVIDIA GPUs"


PAPER = PaperSetup()


def setup_line(setup: Setup) -> str:
    """Where this sweep's setup matches the paper's and where it differs."""
    ours = {
        "model": (", ".join(setup.models) or "?", setup.models == [PAPER.model], PAPER.model_text),
        "data": (
            ", ".join(setup.datasets) or "?",
            bool(setup.datasets) and set(setup.datasets) <= set(PAPER.data),
            PAPER.data_text,
        ),
        "devices": (
            ", ".join(setup.devices) or ", ".join(setup.device_kinds) or "?",
            setup.device_kinds == [PAPER.device_kind],
            PAPER.device_text,
        ),
    }
    differs = [f"{name}: {mine} here, {theirs} in the paper" for name, (mine, same, theirs) in ours.items() if not same]
    same = [name for name, (_, match, _) in ours.items() if match]
    if not differs:
        return (
            f"Setup: this sweep matches the paper's in model, data and device kind ({PAPER.model_text}, "
            f"{PAPER.data_text}, {PAPER.device_text}); sizes, counts and software may still differ."
        )
    matched = f" It matches in {', '.join(same)}." if same else ""
    return (
        "Setup differs from the paper's: " + "; ".join(differs) + f".{matched} The lines below set each finding "
        "beside the paper's and draw no conclusion from one to the other."
    )


def strong_line(analysis: SweepAnalysis) -> str | None:
    result = analysis.best_strong()
    if result is None:
        return None
    top = result.at_max_workers()
    return (
        f"Strong scaling. Paper: going from 1 to 2 GPUs roughly halves the training time. "
        f"Here: {top.speedup:.2f}× from {result.base_workers} to {top.num_workers:g} workers "
        f"({top.efficiency:.0%} efficient, timed work; faster: {result.faster().sentence(analysis.family)})."
    )


def weak_line(analysis: SweepAnalysis) -> str | None:
    result = analysis.best_weak()
    if result is None:
        return None
    top = result.at_max_workers()
    return (
        f"Weak scaling. Paper: throughput grows with the GPUs while the work per GPU is fixed, short of linear as "
        f"communication grows. Here: {top.scaled_speedup:.2f}× the throughput at {top.num_workers:g} workers "
        f"vs {result.base_workers} ({top.efficiency:.0%} efficient; less per worker: "
        f"{result.per_worker_kept().sentence(analysis.family)})."
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
        f"micro batch {first.micro_batch_per_worker:g} to {best.micro_batch_per_worker:g} "
        f"({result.throughput_gain().sentence(analysis.family)})"
    )
    last = points.iloc[-1]
    if best.micro_batch_per_worker != last.micro_batch_per_worker:
        line += f", no gain beyond it (micro batch {last.micro_batch_per_worker:g}: {last.throughput_per_worker:.4g}/s)"
    accuracy = points.dropna(subset=["val_accuracy"])
    change = result.accuracy_change()
    if len(accuracy) >= 2 and change is not None:
        small, large = accuracy.iloc[0].micro_batch_per_worker, accuracy.iloc[-1].micro_batch_per_worker
        line += (
            f"; validation accuracy {accuracy.iloc[0].val_accuracy:.3f} at micro batch {small:g} vs "
            f"{accuracy.iloc[-1].val_accuracy:.3f} at {large:g}, a difference {change.sentence(analysis.family)} "
            f"({result.budgets(small, large)}); "
            + fall_cause(result.budget(small), result.budget(large), f"micro batch {large:g}")
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
    slowed = [
        f
        for f in stragglers_by_configuration(analysis.data.trials, analysis.data.ranks, analysis.stragglers)
        if f.slowed
    ]
    if not slowed:
        return None
    worst = max(slowed, key=lambda f: f.ratio)
    return (
        f"Heterogeneous devices. Paper: a slower GPU drags the whole synchronous group to its pace. "
        f"Here: the slowest rank is {worst.ratio:.2f}× the others' {worst.basis} over {len(worst.trial_ids)} "
        f"trial(s) ({worst.verdict.sentence(analysis.family)})."
    )


def paper_beside_us(analysis: SweepAnalysis, setup: Setup) -> list[str]:
    """The setup's differences, then one sentence per experiment of the paper that this sweep repeats;
    [] where it repeats none."""
    lines = (strong_line, weak_line, batch_line, accumulation_line, heterogeneity_line)
    found = [text for text in (f(analysis) for f in lines) if text]
    return [setup_line(setup), *found] if found else []
