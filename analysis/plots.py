"""The report's figures, drawn with matplotlib's Agg canvas (no display, no global pyplot state).

Each figure function returns a ``Figure`` or, when the sweep has no data for it, the reason it is skipped.
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


@dataclass
class Plots:
    made: dict[str, Path]  # plot name -> PNG file
    skipped: dict[str, str]  # plot name -> why


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


def batch_axis(axes, values) -> None:
    """Batch sizes are usually powers of two: a log2 axis, ticked at the measured sizes in plain numbers."""
    axes.set_xscale("log", base=2)
    axes.set_xticks(sorted(set(values)), [f"{v:g}" for v in sorted(set(values))])
    axes.minorticks_off()


def trials_and_means(axes, rows, metric: str, style: str, label: str, scale: float = 1.0):
    """Every trial as a marker, and a line through the mean at each worker count (repeats stay visible)."""
    means = rows.groupby("num_workers")[metric].mean() * scale
    line = axes.plot(means.index, means.to_numpy(), style, label=label)[0]
    axes.plot(rows["num_workers"], rows[metric] * scale, style[0], color=line.get_color(), alpha=0.5)
    return line


def speedup_figure(analysis: SweepAnalysis) -> Figure | str:
    if not analysis.strong:
        return "no strong-scaling group (data_scaling=fixed) with two or more worker counts"
    figure, (axes,) = new_figure()
    names = labels(analysis.strong)
    top = max(int(r.rows["num_workers"].max()) for r in analysis.strong)
    for result in analysis.strong:
        line = trials_and_means(axes, result.rows, "speedup", "o", names[result.group.id])
        workers = np.linspace(result.base_workers, top, 100)
        axes.plot(workers, workers / result.base_workers, ":", color=line.get_color(), alpha=0.6)
        if result.amdahl:
            f = result.amdahl.serial_fraction
            model = (f + (1 - f) / result.base_workers) / (f + (1 - f) / workers)
            axes.plot(workers, model, "-", color=line.get_color(), alpha=0.8)
    axes.plot([], [], "k:", label="ideal (linear) speedup")
    axes.plot([], [], "k-", label="Amdahl fit")
    axes.set(
        xlabel="workers (data-parallel ranks)", ylabel="speedup T(base) / T(n)  [×]", title="Strong scaling: speedup"
    )
    axes.legend(fontsize="small")
    return figure


def efficiency_figure(analysis: SweepAnalysis) -> Figure | str:
    results = [("strong", r) for r in analysis.strong] + [("weak", r) for r in analysis.weak]
    if not results:
        return "no scaling group with two or more worker counts"
    figure, (axes,) = new_figure()
    names = labels(analysis.strong) | labels(analysis.weak)
    for kind, result in results:
        trials_and_means(
            axes,
            result.rows,
            "efficiency",
            "o-" if kind == "strong" else "s--",
            f"{kind} {names[result.group.id]}",
            scale=100,
        )
    axes.axhline(100, color="k", linestyle=":", label="ideal (100%)")
    axes.set(
        xlabel="workers (data-parallel ranks)",
        ylabel="parallel efficiency  [%]",
        title="Scaling efficiency",
        ylim=(0, None),
    )
    axes.legend(fontsize="small")
    return figure


def throughput_figure(analysis: SweepAnalysis) -> Figure | str:
    if not analysis.batch:
        return "no batch group with two or more micro batch sizes"
    figure, (by_micro, by_global) = new_figure(2)
    names = labels(analysis.batch)
    for result in analysis.batch:
        points = result.points
        line = by_micro.plot(
            points["micro_batch_per_worker"], points["throughput_per_worker"], "o-", label=names[result.group.id]
        )[0]
        by_micro.plot(
            result.knee.micro_batch_per_worker,
            result.knee.throughput_per_worker,
            "*",
            markersize=14,
            color=line.get_color(),
        )
        by_micro.axhline(
            KNEE_FRACTION * result.peak.throughput_per_worker, color=line.get_color(), linestyle=":", alpha=0.6
        )
        by_global.plot(
            points["global_batch"],
            points["throughput_per_worker"],
            "o-",
            color=line.get_color(),
            label=names[result.group.id],
        )
    by_micro.plot([], [], "k*", label="knee")
    by_micro.plot([], [], "k:", label=f"{KNEE_FRACTION:.0%} of peak")
    for axes, what, column in (
        (by_micro, "micro batch per worker", "micro_batch_per_worker"),
        (by_global, "global batch", "global_batch"),
    ):
        axes.set(
            xlabel=f"{what}  [samples]",
            ylabel="throughput per worker  [samples/s]",
            title=f"Throughput vs {what}",
            ylim=(0, None),
        )
        batch_axis(axes, [v for r in analysis.batch for v in r.points[column]])
        axes.legend(fontsize="small")
    return figure


def overhead_figure(analysis: SweepAnalysis) -> Figure | str:
    results = [r for r in analysis.batch if r.points[["comm_fraction", "data_wait_fraction"]].notna().any().any()][
        :MAX_PANELS
    ]
    if not results:
        return "no batch group has comm_fraction or data_wait_fraction"
    figure, panels = new_figure(len(results))
    names = labels(analysis.batch)
    for axes, result in zip(panels, results):
        points = result.points
        positions = np.arange(len(points))
        comm = points["comm_fraction"].fillna(0).to_numpy() * 100
        wait = points["data_wait_fraction"].fillna(0).to_numpy() * 100
        axes.bar(positions, comm, label="gradient all-reduce (comm_fraction)")
        axes.bar(positions, wait, bottom=comm, label="waiting for data (data_wait_fraction)")
        axes.set_xticks(positions, [f"{b:g}" for b in points["micro_batch_per_worker"]])
        axes.set(
            xlabel="micro batch per worker  [samples]",
            ylabel="share of step time  [%]",
            title=names[result.group.id],
            ylim=(0, 100),
        )
        axes.legend(fontsize="small")
    return figure


def accuracy_figure(analysis: SweepAnalysis) -> Figure | str:
    results = [r for r in analysis.batch if r.points["val_accuracy"].notna().sum() >= 2]
    if not results:
        return "no batch group has validation accuracy at two or more batch sizes"
    figure, (accuracy, loss) = new_figure(2)
    names = labels(analysis.batch)
    for result in results:
        points = result.points
        accuracy.plot(
            points["micro_batch_per_worker"], points["val_accuracy"] * 100, "o-", label=names[result.group.id]
        )
        loss.plot(points["micro_batch_per_worker"], points["final_loss"], "o-", label=names[result.group.id])
    accuracy.set(ylabel="validation accuracy  [%]", title="Accuracy vs batch size")
    loss.set(ylabel="final training loss  [cross-entropy, nats]", title="Loss vs batch size")
    for axes in (accuracy, loss):
        batch_axis(axes, [v for r in results for v in r.points["micro_batch_per_worker"]])
        axes.set_xlabel("micro batch per worker  [samples]")
        axes.legend(fontsize="small")
    return figure


def time_to_accuracy_figure(analysis: SweepAnalysis) -> Figure | str:
    if analysis.target is None:
        return analysis.target_source
    reached = analysis.per_trial.dropna(subset=["time_to_accuracy_s"]).sort_values("time_to_accuracy_s")
    if reached.empty:
        return f"no trial reached the target accuracy {analysis.target:.3f}"
    figure = Figure(figsize=(8, 2 + 0.3 * len(reached)), layout="constrained")
    FigureCanvasAgg(figure)
    axes = figure.subplots()
    names = [
        f"{t} (n={w:g}, mb={b:g})"
        for t, w, b in zip(reached["trial_id"], reached["num_workers"], reached["micro_batch_per_worker"])
    ]
    axes.barh(names, reached["time_to_accuracy_s"], label="trials that reached the target")
    axes.invert_yaxis()
    missed = len(analysis.per_trial) - len(reached)
    axes.set(
        xlabel="wall time from trial start  [s]",
        ylabel="trial",
        title=f"Time to {analysis.target:.1%} validation accuracy\n({missed} trial(s) never reached it)",
    )
    axes.legend(fontsize="small")
    return figure


FIGURES: dict[str, Callable[[SweepAnalysis], Figure | str]] = {
    "speedup": speedup_figure,
    "efficiency": efficiency_figure,
    "batch_throughput": throughput_figure,
    "batch_overheads": overhead_figure,
    "batch_accuracy": accuracy_figure,
    "time_to_accuracy": time_to_accuracy_figure,
}


def make_plots(analysis: SweepAnalysis, out_dir: Path) -> Plots:
    plots = Plots({}, {})
    for name, draw in FIGURES.items():
        figure = draw(analysis)
        path = out_dir / f"{name}.png"
        if isinstance(figure, str):
            plots.skipped[name] = figure
            path.unlink(missing_ok=True)  # a figure from an earlier run would contradict this report
            continue
        figure.savefig(path, dpi=110)
        plots.made[name] = path
    return plots
