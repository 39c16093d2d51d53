"""The report's figures, drawn with matplotlib's Agg canvas (no display, no global pyplot state).

Every figure takes one or more labelled sweeps (a comparison draws one series per sweep) and returns a
``Figure`` or, when there is nothing to show, the reason it is not drawn.
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass
from pathlib import Path

import numpy as np
from matplotlib.backends.backend_agg import FigureCanvasAgg
from matplotlib.figure import Figure

from analysis.batch import KNEE_FRACTION
from analysis.compute import SweepAnalysis
from analysis.groups import group_label, varying_columns

MAX_PANELS = 6  # overhead panels, one per batch group; more would be unreadable
MAX_EPOCH_SERIES = 12  # per-epoch lines beyond this are unreadable; the tables hold every trial


@dataclass
class Plots:
    made: dict[str, Path]  # plot name -> PNG file
    skipped: dict[str, str]  # plot name -> why


@dataclass
class Series:
    """One sweep's analysis and the prefix of its series' labels ("" for a single-sweep report)."""

    label: str
    analysis: SweepAnalysis

    def name(self, text: str) -> str:
        return f"{self.label}: {text}" if self.label else text


def new_figure(panels: int = 1) -> tuple[Figure, list]:
    figure = Figure(figsize=(6.4 * min(panels, 3), 4.2 * ((panels + 2) // 3)), layout="constrained")
    FigureCanvasAgg(figure)
    axes = figure.subplots((panels + 2) // 3, min(panels, 3), squeeze=False).ravel().tolist()
    for extra in axes[panels:]:
        extra.set_visible(False)
    return figure, axes[:panels]


def labels(results: list) -> dict[str, str]:
    columns = varying_columns([r.group for r in results])
    return {r.group.id: f"{r.group.id}: {group_label(r.group, columns)}" if columns else r.group.id for r in results}


def log2_axis(axes, values) -> None:
    """Batch sizes and worker counts are usually powers of two: a log2 axis, ticked at the measured values."""
    ticks = sorted({float(v) for v in values})
    axes.set_xscale("log", base=2)
    axes.set_xticks(ticks, [f"{v:g}" for v in ticks])
    axes.minorticks_off()
    if len(ticks) == 1:
        axes.set_xlim(ticks[0] / 1.5, ticks[0] * 1.5)


def trials_and_medians(axes, rows, metric: str, style: str, label: str, scale: float = 1.0, color=None):
    """Every trial as a faint marker, and a line through the median at each worker count (repeats stay visible)."""
    medians = rows.groupby("num_workers")[metric].median() * scale
    line = axes.plot(medians.index, medians.to_numpy(), style, label=label, color=color)[0]
    axes.plot(rows["num_workers"], rows[metric] * scale, style[0], color=line.get_color(), alpha=0.4)
    return line


def speedup_figure(series: list[Series]) -> Figure | str:
    drawn = [(s, r) for s in series for r in s.analysis.strong]
    if not drawn:
        return "no strong-scaling group (data_scaling=fixed) with two or more worker counts"
    figure, (speedup, efficiency) = new_figure(2)
    workers = [w for _, r in drawn for w in r.rows["num_workers"]]
    for s in series:
        names = labels(s.analysis.strong)
        for result in s.analysis.strong:
            line = trials_and_medians(speedup, result.rows, "speedup", "o-", s.name(names[result.group.id]))
            trials_and_medians(
                efficiency, result.rows, "efficiency", "o-", s.name(names[result.group.id]), 100, line.get_color()
            )
            if result.amdahl:
                grid = np.geomspace(result.base_workers, max(workers), 100)
                f = result.amdahl.serial_fraction
                model = (f + (1 - f) / result.base_workers) / (f + (1 - f) / grid)
                speedup.plot(grid, model, "-", color=line.get_color(), alpha=0.5, linewidth=3)
    base = min(r.base_workers for _, r in drawn)
    grid = np.geomspace(base, max(workers), 100)
    speedup.plot(grid, grid / base, "k:", label="ideal (linear) speedup")
    if any(r.amdahl for _, r in drawn):
        speedup.plot([], [], "k-", alpha=0.5, linewidth=3, label="Amdahl fit")
    efficiency.axhline(100, color="k", linestyle=":", label="ideal (100%)")
    top = max(110.0, float(max(r.rows["efficiency"].max() for _, r in drawn)) * 105)
    speedup.set(ylabel="speedup R(n) / R(base)  [×]", title="Strong scaling: speedup (timed work)")
    efficiency.set(ylabel="parallel efficiency  [%]", title="Strong scaling: efficiency", ylim=(0, top))
    for axes in (speedup, efficiency):
        log2_axis(axes, workers)
        axes.set_xlabel("workers (data-parallel ranks)")
        axes.legend(fontsize="small")
    return figure


def efficiency_figure(series: list[Series]) -> Figure | str:
    drawn = [(s, r) for s in series for r in s.analysis.weak]
    if not drawn:
        return "no weak-scaling group with two or more worker counts (strong-scaling efficiency is in `speedup`)"
    figure, (axes,) = new_figure()
    for s in series:
        names = labels(s.analysis.weak)
        for result in s.analysis.weak:
            trials_and_medians(axes, result.rows, "efficiency", "s--", s.name(f"weak {names[result.group.id]}"), 100)
    axes.axhline(100, color="k", linestyle=":", label="ideal (100%)")
    top = max(110.0, float(max(r.rows["efficiency"].max() for _, r in drawn)) * 105)
    axes.set(
        xlabel="workers (data-parallel ranks)",
        ylabel="parallel efficiency  [%]",
        title="Weak scaling: efficiency (timed work)",
        ylim=(0, top),
    )
    log2_axis(axes, [w for _, r in drawn for w in r.rows["num_workers"]])
    axes.legend(fontsize="small")
    return figure


def weak_throughput_figure(series: list[Series]) -> Figure | str:
    drawn = [(s, r) for s in series for r in s.analysis.weak]
    if not drawn:
        return "no weak-scaling group with two or more worker counts"
    figure, (axes,) = new_figure()
    for s in series:
        names = labels(s.analysis.weak)
        for result in s.analysis.weak:
            line = trials_and_medians(axes, result.rows, "throughput_per_worker", "o-", s.name(names[result.group.id]))
            base = result.rows.loc[result.rows["num_workers"] == result.base_workers, "throughput_per_worker"]
            axes.axhline(float(base.median()), color=line.get_color(), linestyle=":", alpha=0.6)
    axes.plot([], [], "k:", label="ideal: the base's throughput per worker")
    axes.set(
        xlabel="workers (data-parallel ranks)",
        ylabel="throughput per worker  [samples/s]",
        title="Weak scaling: throughput per worker",
        ylim=(0, None),
    )
    log2_axis(axes, [w for _, r in drawn for w in r.rows["num_workers"]])
    axes.legend(fontsize="small")
    return figure


def throughput_figure(series: list[Series]) -> Figure | str:
    drawn = [r for s in series for r in s.analysis.batch]
    if not drawn:
        return "no batch group with two or more micro batch sizes"
    figure, (axes,) = new_figure()
    memory = axes.twinx()
    has_memory = False
    for s in series:
        names = labels(s.analysis.batch)
        for result in s.analysis.batch:
            points = result.points
            spread = [
                points["throughput_per_worker"] - points["throughput_min"],
                points["throughput_max"] - points["throughput_per_worker"],
            ]
            line = axes.errorbar(
                points["micro_batch_per_worker"],
                points["throughput_per_worker"],
                yerr=spread,
                fmt="o-",
                capsize=3,
                label=s.name(names[result.group.id]),
            )[0]
            axes.plot(
                result.knee.micro_batch_per_worker,
                result.knee.throughput_per_worker,
                "*",
                markersize=14,
                color=line.get_color(),
            )
            if points["peak_mem_gib"].notna().any():
                has_memory = True
                memory.plot(
                    points["micro_batch_per_worker"], points["peak_mem_gib"], "^--", color=line.get_color(), alpha=0.6
                )
    axes.plot([], [], "k*", label=f"knee (≥ {KNEE_FRACTION:.0%} of peak)")
    if has_memory:
        axes.plot([], [], "k^--", alpha=0.6, label="peak memory (right axis)")
        memory.set(ylabel="peak memory per rank  [GiB]", ylim=(0, None))
    else:
        memory.set_visible(False)
    axes.set(
        xlabel="micro batch per worker  [samples]",
        ylabel="throughput per worker  [samples/s]",
        title="Throughput and memory vs micro batch",
        ylim=(0, None),
    )
    log2_axis(axes, [v for r in drawn for v in r.points["micro_batch_per_worker"]])
    axes.legend(fontsize="small", loc="upper center", bbox_to_anchor=(0.5, -0.15), ncol=2)
    return figure


def overhead_figure(series: list[Series]) -> Figure | str:
    results = [
        (s, r)
        for s in series
        for r in s.analysis.batch
        if (r.points[["comm_exposed_ms", "data_wait_fraction"]].fillna(0) > 0).any().any()
    ][:MAX_PANELS]
    if not results:
        return "no batch group has exposed communication or data wait above zero"
    figure, panels = new_figure(len(results))
    for axes, (s, result) in zip(panels, results):
        points = result.points
        positions = np.arange(len(points))
        comm = (points["comm_exposed_ms"] / points["step_time_ms"]).fillna(0).clip(lower=0).to_numpy() * 100
        wait = points["data_wait_fraction"].fillna(0).to_numpy() * 100
        axes.bar(positions, comm, label="exposed communication (comm_exposed_ms / step)")
        axes.bar(positions, wait, bottom=comm, label="waiting for data (data_wait_fraction)")
        axes.set_xticks(positions, [f"{b:g}" for b in points["micro_batch_per_worker"]])
        axes.set(
            xlabel="micro batch per worker  [samples]",
            ylabel="share of step time  [%]",
            title=s.name(labels(s.analysis.batch)[result.group.id]),
            ylim=(0, max(1e-3, (comm + wait).max()) * 1.2),
        )
        axes.legend(fontsize="small")
    return figure


def accuracy_figure(series: list[Series]) -> Figure | str:
    results = [(s, r) for s in series for r in s.analysis.batch if r.points["val_accuracy"].notna().sum() >= 2]
    if not results:
        return "no batch group has validation accuracy at two or more batch sizes"
    figure, (accuracy, loss) = new_figure(2)
    for s, result in results:
        name = s.name(labels(s.analysis.batch)[result.group.id])
        points = result.points
        accuracy.plot(points["micro_batch_per_worker"], points["val_accuracy"] * 100, "o-", label=name)
        loss.plot(points["micro_batch_per_worker"], points["final_loss"], "o-", label=name)
    accuracy.set(ylabel="validation accuracy  [%]", title="Accuracy vs batch size")
    loss.set(ylabel="final training loss  [cross-entropy, nats]", title="Loss vs batch size")
    for axes in (accuracy, loss):
        log2_axis(axes, [v for _, r in results for v in r.points["micro_batch_per_worker"]])
        axes.set_xlabel("micro batch per worker  [samples]")
        axes.legend(fontsize="small")
    return figure


def joules_figure(series: list[Series]) -> Figure | str:
    results = [(s, r) for s in series for r in s.analysis.batch if r.points["joules_per_sample"].notna().any()]
    if not results:
        return "no batch group has joules_per_sample (NVML energy; null on CPUs)"
    figure, (axes,) = new_figure()
    for s, result in results:
        axes.plot(
            result.points["micro_batch_per_worker"],
            result.points["joules_per_sample"],
            "o-",
            label=s.name(labels(s.analysis.batch)[result.group.id]),
        )
    axes.set(
        xlabel="micro batch per worker  [samples]",
        ylabel="energy per sample  [J]",
        title="Energy per sample vs micro batch",
        ylim=(0, None),
    )
    log2_axis(axes, [v for _, r in results for v in r.points["micro_batch_per_worker"]])
    axes.legend(fontsize="small")
    return figure


def time_to_accuracy_figure(series: list[Series]) -> Figure | str:
    bars = [
        (s.name(f"{t} (n={w:g}, mb={b:g})"), seconds)
        for s in series
        if s.analysis.target is not None
        for t, w, b, seconds in s.analysis.per_trial.dropna(subset=["time_to_accuracy_s"])[
            ["trial_id", "num_workers", "micro_batch_per_worker", "time_to_accuracy_s"]
        ].itertuples(index=False)
    ]
    if not bars:
        return "no trial reached a target accuracy (or the sweep has no validation accuracy)"
    bars.sort(key=lambda bar: bar[1])
    figure = Figure(figsize=(8, 2 + 0.3 * len(bars)), layout="constrained")
    FigureCanvasAgg(figure)
    axes = figure.subplots()
    axes.barh([name for name, _ in bars], [seconds for _, seconds in bars])
    axes.invert_yaxis()
    targets = ", ".join(f"{s.analysis.target:.1%}" for s in series if s.analysis.target is not None)
    axes.set(xlabel="training time to the target  [s]", ylabel="trial", title=f"Time to {targets} validation accuracy")
    return figure


def epochs_figure(series: list[Series]) -> Figure | str:
    epochs = [
        (s, trial, part.sort_values("epoch"))
        for s in series
        for trial, part in s.analysis.data.epochs.groupby("trial_id", sort=True)
    ]
    if not epochs:
        return "the epochs table has no rows for the completed trials"
    figure, (loss, accuracy) = new_figure(2)
    for s, trial, part in epochs[:MAX_EPOCH_SERIES]:
        loss.plot(part["epoch"], part["train_loss"], "o-", label=s.name(trial))
        if part["val_accuracy"].notna().any():
            accuracy.plot(part["epoch"], part["val_accuracy"] * 100, "o-", label=s.name(trial))
    loss.set(xlabel="epoch", ylabel="training loss  [cross-entropy, nats]", title="Training loss per epoch")
    accuracy.set(xlabel="epoch", ylabel="validation accuracy  [%]", title="Validation accuracy per epoch")
    for axes in (loss, accuracy):
        axes.xaxis.get_major_locator().set_params(integer=True)
        if axes.lines:
            axes.legend(fontsize="x-small")
        else:
            axes.text(0.5, 0.5, "no validation accuracy recorded", ha="center", transform=axes.transAxes)
    return figure


FIGURES: dict[str, Callable[[list[Series]], Figure | str]] = {
    "speedup": speedup_figure,
    "efficiency": efficiency_figure,
    "weak_throughput": weak_throughput_figure,
    "batch_throughput": throughput_figure,
    "batch_overheads": overhead_figure,
    "batch_accuracy": accuracy_figure,
    "joules_per_sample": joules_figure,
    "time_to_accuracy": time_to_accuracy_figure,
    "epochs": epochs_figure,
}
# The headline plot for each kind of sweep, in the order a sweep is taken to be of that kind.
HEADLINES = ("speedup", "weak_throughput", "batch_throughput", "epochs")


def make_plots(series: SweepAnalysis | list[Series], out_dir: Path) -> Plots:
    if isinstance(series, SweepAnalysis):
        series = [Series("", series)]
    plots = Plots({}, {})
    for name, draw in FIGURES.items():
        figure = draw(series)
        path = out_dir / f"{name}.png"
        if isinstance(figure, str):
            plots.skipped[name] = figure
            path.unlink(missing_ok=True)  # a figure from an earlier run would contradict this report
            continue
        figure.savefig(path, dpi=100)
        plots.made[name] = path
    return plots
