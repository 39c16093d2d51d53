"""The report's figures, drawn with matplotlib's Agg canvas (no display, no global pyplot state).

Every figure takes one or more labelled sweeps (a comparison draws one series per sweep) and returns a
``Drawn`` (the figure and a caption written from what was drawn on it) or, when there is nothing to show,
the reason it is not drawn. Value axes start at 0 (or the values are written on the bars); ratios that have
an ideal (speedup, efficiency) sit on linear axes, where the ideal is a straight line; series are named by
the parameters that differ between them, never by trial ids.
"""

from __future__ import annotations

import json
import re
from collections.abc import Callable
from dataclasses import dataclass, field
from pathlib import Path

import numpy as np
import pandas as pd
from matplotlib.backends.backend_agg import FigureCanvasAgg
from matplotlib.figure import Figure

from analysis.metrics.batch import KNEE_FRACTION
from analysis.metrics.compute import SweepAnalysis
from analysis.report.prediction_section import PREDICTED_FIGURE
from analysis.rows.errors import AnalysisError
from analysis.rows.groups import group_label, trial_labels, varying_columns

MAX_PANELS = 6  # overhead panels, one per batch group; more would be unreadable
MAX_EPOCH_SERIES = 12  # per-epoch lines beyond this are unreadable; the tables hold every trial


@dataclass
class Plots:
    made: dict[str, Path]  # plot name -> PNG file
    skipped: dict[str, str]  # plot name -> why
    captions: dict[str, str] = field(default_factory=dict)  # plot name -> what its figure shows


@dataclass
class Drawn:
    figure: Figure
    caption: str


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


def linear_workers_axis(axes, values) -> None:
    """Worker counts on a linear axis from 0, ticked at the measured values: an ideal p is a straight line."""
    ticks = sorted({float(v) for v in values})
    axes.set_xticks(ticks, [f"{v:g}" for v in ticks])
    axes.set_xlim(0, max(ticks) * 1.08)


SCALING_LABELS = {
    "strong": ("speedup R(n) / R(base)  [×]", "Strong scaling: speedup", "Amdahl fit", "speedup"),
    "weak": ("scaled speedup R(n) / R(base)  [×]", "Weak scaling: scaled speedup", "Gustafson fit", "scaled speedup"),
}


def scaling_figure(series: list[Series], kind: str) -> Drawn | str:
    """Strong or weak scaling, one piece: R(n) / R(base) (left) and efficiency (right) against the workers."""
    drawn = [(s, r) for s in series for r in getattr(s.analysis, kind)]
    if not drawn:
        return f"no {kind}-scaling group with two or more worker counts"
    ylabel, title, fit_name, ratio_name = SCALING_LABELS[kind]
    figure, (ratio, efficiency) = new_figure(2)
    workers = [w for _, r in drawn for w in r.rows["num_workers"]]
    fitted = False
    for s in series:
        names = labels(getattr(s.analysis, kind))
        for result in getattr(s.analysis, kind):
            label = s.name(names[result.group.id])
            line = trials_and_medians(ratio, result.rows, result.ratio, "o-", label)
            trials_and_medians(efficiency, result.rows, "efficiency", "o-", label, 100, line.get_color())
            grid = np.linspace(result.base_workers, max(workers), 100)
            model = result.fitted_ratio(grid)
            if model is not None:
                fitted = True
                ratio.plot(grid, model, "-", color=line.get_color(), alpha=0.5, linewidth=3)
    base = min(r.base_workers for _, r in drawn)
    ratio.plot([0, max(workers)], [0, max(workers) / base], "k:", label="ideal: p = n / base")
    if fitted:
        ratio.plot([], [], "k-", alpha=0.5, linewidth=3, label=fit_name)
    efficiency.axhline(100, color="k", linestyle=":", label="ideal (100%)")
    top = max(110.0, float(max(r.rows["efficiency"].max() for _, r in drawn)) * 105)
    ratio.set(ylabel=ylabel, title=f"{title} (timed work)", ylim=(0, None))
    efficiency.set(ylabel="parallel efficiency  [%]", title=f"{title.split(':')[0]}: efficiency", ylim=(0, top))
    for axes in (ratio, efficiency):
        linear_workers_axis(axes, workers)
        axes.set_xlabel("workers (data-parallel ranks)")
        axes.legend(fontsize="small")
    repeats = max(r.rows.groupby("num_workers").size().max() for _, r in drawn)
    caption = (
        f"{title.split(':')[0]} from timed work: {ratio_name} R(n) / R(base) (left) and efficiency (right) against "
        "the workers, linear axes from 0; dotted: ideal (a straight line)"
        + (f"; thick: {fit_name}" if fitted else f"; no {fit_name} drawn (fewer than 3 worker counts)")
        + (f"; lines through medians, faint markers: each of up to {repeats} repeats" if repeats > 1 else "")
    )
    return Drawn(figure, caption)


def weak_throughput_figure(series: list[Series]) -> Drawn | str:
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
    linear_workers_axis(axes, [w for _, r in drawn for w in r.rows["num_workers"]])
    axes.legend(fontsize="small")
    return Drawn(
        figure,
        "Weak scaling: throughput per worker against the workers (axes from 0); dotted: the base's throughput "
        "per worker, which ideal weak scaling keeps; faint markers: single trials",
    )


def throughput_figure(series: list[Series]) -> Drawn | str:
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
    repeats = int(max(r.points["trials"].max() for r in drawn))
    caption = (
        "Throughput per worker against the micro batch (log2 axis; throughput from 0): medians"
        + (f", bars: range over {repeats} repeats" if repeats > 1 else " of single runs (no spread measured)")
        + f"; star: knee (≥ {KNEE_FRACTION:.0%} of the best)"
        + ("; dashed, right axis from 0: peak memory per rank" if has_memory else "")
    )
    return Drawn(figure, caption)


def overhead_figure(series: list[Series]) -> Drawn | str:
    results = [
        (s, r)
        for s in series
        for r in s.analysis.batch
        if (r.points[["comm_exposed_ms", "data_wait_fraction"]].fillna(0) > 0).any().any()
    ][:MAX_PANELS]
    if not results:
        return "no batch group has exposed communication or data wait above zero"
    figure, panels = new_figure(len(results))
    shown: set[str] = set()
    for axes, (s, result) in zip(panels, results):
        points = result.points
        positions = np.arange(len(points))
        comm = (points["comm_exposed_ms"] / points["step_time_ms"]).fillna(0).clip(lower=0).to_numpy() * 100
        wait = points["data_wait_fraction"].fillna(0).to_numpy() * 100
        bottom = np.zeros(len(points))
        for name, values in (("exposed communication", comm), ("waiting for data", wait)):
            if (values > 0).any():  # a series with nothing to draw gets no bar and no legend entry
                axes.bar(positions, values, bottom=bottom, label=name)
                bottom = bottom + values
                shown.add(name)
        axes.bar_label(axes.containers[-1], labels=[f"{v:.2g}%" for v in bottom], fontsize="small")
        axes.set_xticks(positions, [f"{b:g}" for b in points["micro_batch_per_worker"]])
        axes.set(
            xlabel="micro batch per worker  [samples]",
            ylabel="share of step time  [%]",
            title=s.name(labels(s.analysis.batch)[result.group.id]),
            ylim=(0, 100),
        )
        axes.legend(fontsize="small")
    caption = (
        "Share of the step time spent on "
        + " and ".join(sorted(shown))
        + " against the micro batch (stacked, on the whole 0–100% axis; each bar's total written above it)"
    )
    return Drawn(figure, caption)


def accuracy_figure(series: list[Series]) -> Drawn | str:
    results = [(s, r) for s in series for r in s.analysis.batch if r.points["val_accuracy"].notna().sum() >= 2]
    if not results:
        return "no batch group has validation accuracy at two or more batch sizes"
    figure, (accuracy, loss) = new_figure(2)
    for s, result in results:
        name = s.name(labels(s.analysis.batch)[result.group.id])
        points = result.points
        accuracy.plot(points["micro_batch_per_worker"], points["val_accuracy"] * 100, "o-", label=name)
        loss.plot(points["micro_batch_per_worker"], points["final_loss"], "o-", label=name)
    accuracy.set(ylabel="validation accuracy  [%]", title="Accuracy vs batch size", ylim=(0, 100))
    loss.set(ylabel="final training loss  [cross-entropy, nats]", title="Loss vs batch size", ylim=(0, None))
    for axes in (accuracy, loss):
        log2_axis(axes, [v for _, r in results for v in r.points["micro_batch_per_worker"]])
        axes.set_xlabel("micro batch per worker  [samples]")
        axes.legend(fontsize="small")
    return Drawn(
        figure,
        "Validation accuracy (left, 0–100%) and final training loss (right, from 0) against the micro batch "
        "(log2 axis); medians over repeats",
    )


def tuned_accuracy_figure(series: list[Series]) -> Drawn | str:
    results = [(s, r) for s in series for r in s.analysis.tuned]
    if not results:
        return "the sweep did not search the learning rate at two or more batch sizes"
    figure, (axes,) = new_figure()
    for s, result in results:
        for curve, style in ((result.rule, "s--"), (result.tuned, "o-")):
            points = curve.points()
            if points.empty:
                continue
            middle = points["val_accuracy"] * 100
            axes.errorbar(
                points["micro_batch_per_worker"],
                middle,
                yerr=[middle - points["accuracy_min"] * 100, points["accuracy_max"] * 100 - middle],
                fmt=style,
                capsize=3,
                label=s.name(f"{result.group.id}: {curve.label}"),
            )
    batches = [b for _, r in results for b in r.tuned.values]
    log2_axis(axes, batches)
    axes.set(
        xlabel="micro batch per worker  [samples]",
        ylabel="validation accuracy  [%]",
        title="Accuracy vs batch size: scaling-rule and tuned learning rate",
        ylim=(0, 100),
    )
    axes.legend(fontsize="small")
    return Drawn(
        figure,
        "Validation accuracy (0–100%) against the micro batch (log2 axis): the scaling rule's learning rate "
        "(squares) and the best of each batch size's search (circles); medians over repeats, bars their range",
    )


def joules_figure(series: list[Series]) -> Drawn | str:
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
    return Drawn(
        figure, "Energy per trained sample (NVML, timed window; from 0) against the micro batch (log2 axis); medians"
    )


def time_to_accuracy_figure(series: list[Series]) -> Drawn | str:
    """One panel per sweep with a target: a bar per trial, named by the parameters that differ."""
    panels = []
    for s in series:
        if s.analysis.target is None:
            continue
        reached = s.analysis.per_trial.dropna(subset=["time_to_accuracy_s"]).sort_values("time_to_accuracy_s")
        if not reached.empty:
            names = trial_labels(s.analysis.data.trials)
            panels.append((s, [(names[t], v) for t, v in zip(reached["trial_id"], reached["time_to_accuracy_s"])]))
    if not panels:
        return "no trial reached a target accuracy (or the sweep has no validation accuracy)"
    rows = max(len(bars) for _, bars in panels)
    figure = Figure(figsize=(8 * len(panels), 1.5 + 0.3 * rows), layout="constrained")
    FigureCanvasAgg(figure)
    for axes, (s, bars) in zip(np.atleast_1d(figure.subplots(1, len(panels))), panels):
        axes.barh([name for name, _ in bars], [seconds for _, seconds in bars])
        axes.invert_yaxis()
        axes.set(xlabel="training time to the target  [s]", title=s.name(f"to {s.analysis.target:.1%} accuracy"))
        axes.tick_params(axis="y", labelsize="small")
    return Drawn(
        figure,
        "Training time to the target validation accuracy, one bar per trial that reached it (from 0)"
        + ("; one panel per sweep, each with its own target" if len(panels) > 1 else ""),
    )


def natural_text(text: str) -> tuple:
    """``mb=16`` before ``mb=128``: the digits of a label compared as numbers."""
    return tuple(int(part) if part.isdigit() else part for part in re.split(r"(\d+)", text))


def epochs_figure(series: list[Series]) -> Drawn | str:
    epochs = [
        (s, trial, part.sort_values("epoch"))
        for s in series
        for trial, part in s.analysis.data.epochs.groupby("trial_id", sort=True)
    ]
    if not epochs:
        return "the epochs table has no rows for the completed trials"
    names = {id(s): trial_labels(s.analysis.data.trials) for s in series}
    epochs.sort(key=lambda e: (e[0].label, natural_text(names[id(e[0])].get(e[1], e[1]))))
    figure, (loss, accuracy) = new_figure(2)
    for s, trial, part in epochs[:MAX_EPOCH_SERIES]:
        label = s.name(names[id(s)].get(trial, trial))
        loss.plot(part["epoch"], part["train_loss"], "o-", label=label)
        if part["val_accuracy"].notna().any():
            accuracy.plot(part["epoch"], part["val_accuracy"] * 100, "o-", label=label)
    loss.set(
        xlabel="epoch", ylabel="training loss  [cross-entropy, nats]", title="Training loss per epoch", ylim=(0, None)
    )
    accuracy.set(
        xlabel="epoch", ylabel="validation accuracy  [%]", title="Validation accuracy per epoch", ylim=(0, 100)
    )
    for axes in (loss, accuracy):
        axes.xaxis.get_major_locator().set_params(integer=True)
        if axes.lines:
            axes.legend(fontsize="x-small")
        else:
            axes.text(0.5, 0.5, "no validation accuracy recorded", ha="center", transform=axes.transAxes)
    shown = min(len(epochs), MAX_EPOCH_SERIES)
    more = f" ({shown} of {len(epochs)} trials drawn; the tables hold all)" if shown < len(epochs) else ""
    return Drawn(
        figure,
        f"Training loss (from 0) and validation accuracy (0–100%) per epoch of every trial{more}; lines named by "
        "the parameters that differ between the trials",
    )


MAX_PREDICTED_SERIES = 6  # predicted curves per panel beyond this are unreadable; the section's table has all
PREDICTED_PANELS = {
    "strong": ("global batch", "global_batch", "speedup R(n) / R(1)  [×]", "Strong scaling"),
    "weak": ("micro batch", "micro_batch", "scaled speedup R(n) / R(1)  [×]", "Weak scaling"),
}


def predicted_series(frames: list[tuple[str, pd.DataFrame]], kind: str) -> list[tuple[str, pd.DataFrame]]:
    """(label, rows by worker count) per sweep, configuration and base batch of one scaling kind."""
    base_name, base_column, _, _ = PREDICTED_PANELS[kind]
    configurations = {c for _, f in frames for c in f.loc[f["scaling"] == kind, "configuration"]}
    differing = configuration_differences(configurations)
    found = []
    for label, frame in frames:
        for (configuration, base), rows in frame[frame["scaling"] == kind].groupby(["configuration", base_column]):
            name = ", ".join(filter(None, [differing[configuration], f"{base_name} {base:g}"]))
            found.append((f"{label}: {name}" if label else name, rows.sort_values("num_workers")))
    return found


def measured_beyond_base(rows: pd.DataFrame) -> bool:
    return bool((rows["measured"] & (rows["num_workers"] > rows["num_workers"].min())).any())


def configuration_differences(configurations: set[str]) -> dict[str, str]:
    """Each configuration (JSON) named by the parameters whose values differ between them ("" for one)."""
    parsed = {c: json.loads(c) for c in configurations}
    keys = sorted({k for p in parsed.values() for k in p})
    differing = [k for k in keys if len({json.dumps(p.get(k)) for p in parsed.values()}) > 1]
    return {c: ", ".join(f"{k}={p.get(k)}" for k in differing) for c, p in parsed.items()}


def measured_ratios(rows: pd.DataFrame) -> pd.DataFrame | None:
    """Measured speedup (median, low, high from the slowest and fastest repeat) against the series' base count;
    None where the base count or no count beyond it was measured."""
    base = rows.iloc[0]
    measured = rows[rows["measured"]]
    if not base["measured"] or len(measured) < 2:
        return None
    base_rate = base["global_batch"] / base["measured_step_time_ms"]
    ratio = pd.DataFrame({"num_workers": measured["num_workers"]})
    for column, step in (("median", "measured_step_time_ms"), ("low", "measured_max_ms"), ("high", "measured_min_ms")):
        ratio[column] = measured["global_batch"] / measured[step] / base_rate
    ratio["efficiency_scale"] = 100.0 * base["num_workers"] / measured["num_workers"]
    return ratio


def predicted_scaling_figure(frames: list[tuple[str, pd.DataFrame]]) -> Drawn | str:
    """Predicted curves through every worker count (dashed, hollow markers) and the measured medians with their
    spread where the sweep ran that count: speedup and efficiency, a row per scaling kind.

    ``frames``: (series label prefix, ``analysis.prediction.predict.predict_from_trials`` frame) per sweep."""
    frames = [(label, f) for label, f in frames if not f.empty]
    if not frames:
        return "no prediction: no configuration with a completed 1-rank trial"
    found = {k: predicted_series(frames, k) for k in PREDICTED_PANELS}
    compared = {k: [(n, r) for n, r in series if measured_beyond_base(r)] for k, series in found.items()}
    # Where the sweep measured a kind beyond its base count, the panels compare those series; else all predicted.
    found = {k: series for k, series in (compared if any(compared.values()) else found).items() if series}
    kinds = list(found)
    figure = Figure(figsize=(12.8, 4.2 * len(kinds)), layout="constrained")
    FigureCanvasAgg(figure)
    rows_of_axes = figure.subplots(len(kinds), 2, squeeze=False)
    drawn_series = total_series = 0
    repeats = 0
    beyond_drawn = measured_drawn = False
    for (ratio, efficiency), kind in zip(rows_of_axes, kinds):
        _, _, ylabel, title = PREDICTED_PANELS[kind]
        total_series += len(found[kind])
        workers, measured_workers, top_efficiency = [], [], 100.0
        for name, rows in found[kind][:MAX_PREDICTED_SERIES]:
            line = ratio.plot(rows["num_workers"], rows["speedup"], "--o", mfc="none", label=f"{name}: predicted")[0]
            efficiency.plot(rows["num_workers"], rows["efficiency"] * 100, "--o", mfc="none", color=line.get_color())
            workers += list(rows["num_workers"])
            top_efficiency = max(top_efficiency, float(rows["efficiency"].max()) * 100)
            measured = measured_ratios(rows)
            if measured is None:
                continue
            measured_drawn = True
            repeats = max(repeats, int(rows["measured_repeats"].max()))
            measured_workers += list(measured["num_workers"])
            for axes, scale in ((ratio, 1.0), (efficiency, measured["efficiency_scale"])):
                middle = measured["median"] * scale
                spread = [middle - measured["low"] * scale, measured["high"] * scale - middle]
                axes.errorbar(
                    measured["num_workers"], middle, yerr=spread, fmt="s", capsize=3, color=line.get_color(),
                    label=f"{name}: measured" if axes is ratio else None,
                )  # fmt: skip
            top_efficiency = max(top_efficiency, float((measured["high"] * measured["efficiency_scale"]).max()))
        drawn_series += min(len(found[kind]), MAX_PREDICTED_SERIES)
        base = min(int(rows["num_workers"].min()) for _, rows in found[kind])
        ratio.plot([0, max(workers)], [0, max(workers) / base], "k:", label="ideal")
        efficiency.axhline(100, color="k", linestyle=":", label="ideal (100%)")
        if measured_workers and max(workers) > max(measured_workers):
            beyond_drawn = True
            for axes in (ratio, efficiency):
                axes.axvspan(max(measured_workers), max(workers) * 1.08, color="0.9", zorder=0)
            ratio.plot([], [], "s", color="0.9", markersize=10, label="beyond the measured ranks")
        ratio.set(ylabel=ylabel, title=f"{title}: speedup, predicted and measured", ylim=(0, None))
        efficiency.set(ylabel="parallel efficiency  [%]", title=f"{title}: efficiency", ylim=(0, top_efficiency * 1.05))
        for axes in (ratio, efficiency):
            linear_workers_axis(axes, workers)
            axes.set_xlabel("workers (data-parallel ranks)")
            axes.legend(fontsize="small")
    caption = (
        " and ".join(PREDICTED_PANELS[k][3].lower() for k in kinds).capitalize()
        + " predicted by the step-time model (from the 1-rank trials and the link probe): speedup (left) and "
        "efficiency (right) against the workers, linear axes from 0; dashed, hollow markers: predicted, "
        "through every predicted worker count"
        + (
            "; squares: measured medians, bars: their range"
            + (f" over up to {repeats} repeats" if repeats > 1 else " (single runs: no spread)")
            if measured_drawn
            else "; nothing measured beyond one rank to compare"
        )
        + ("; shaded: beyond the most ranks measured" if beyond_drawn else "")
        + "; dotted: ideal (a straight line)"
        + (
            f"; {drawn_series} of {total_series} series drawn (the table has all)"
            if drawn_series < total_series
            else ""
        )
    )
    return Drawn(figure, caption)


def prediction_figure(series: list[Series]) -> Drawn | str:
    frames, reasons = [], []
    for s in series:
        try:
            frames.append((s.label, s.analysis.predictions))
        except AnalysisError as exc:
            reasons.append(s.name(str(exc)))
    return predicted_scaling_figure(frames) if frames else "; ".join(reasons)


FIGURES: dict[str, Callable[[list[Series]], Drawn | str]] = {
    "speedup": lambda series: scaling_figure(series, "strong"),
    "efficiency": lambda series: scaling_figure(series, "weak"),
    "weak_throughput": weak_throughput_figure,
    "batch_throughput": throughput_figure,
    "batch_overheads": overhead_figure,
    "batch_accuracy": accuracy_figure,
    "joules_per_sample": joules_figure,
    "time_to_accuracy": time_to_accuracy_figure,
    "epochs": epochs_figure,
    PREDICTED_FIGURE: prediction_figure,
    "tuned_accuracy": tuned_accuracy_figure,
}
# The headline plot for each kind of sweep, in the order a sweep is taken to be of that kind.
HEADLINES = ("speedup", "efficiency", "batch_throughput", "epochs")


def make_plots(series: SweepAnalysis | list[Series], out_dir: Path) -> Plots:
    if isinstance(series, SweepAnalysis):
        series = [Series("", series)]
    plots = Plots({}, {})
    for name, draw in FIGURES.items():
        drawn = draw(series)
        path = out_dir / f"{name}.png"
        if isinstance(drawn, str):
            plots.skipped[name] = drawn
            path.unlink(missing_ok=True)  # a figure from an earlier run would contradict this report
            continue
        drawn.figure.savefig(path, dpi=100)
        plots.made[name] = path
        plots.captions[name] = drawn.caption
    return plots
