"""Helpers that figures of several experiments share: A/B runs' medians and pairs, run scripts' economy lines."""

from __future__ import annotations

import json
import statistics
from collections.abc import Callable

from . import listed, measures, span


def economy_runs(experiment: str) -> dict[str, dict]:
    """Each run's economy line in ``experiment``'s long summary: tag -> quantity -> value, plus its ``call``."""
    runs: dict[str, dict] = {}
    for (source, record, quantity), value in measures(experiment).items():
        if source == "table" or source.endswith("/table"):
            run = runs.setdefault(record, {"call": source.split("/")[0] if "/" in source else ""})
            run[quantity] = value
    return runs


def setups(run: dict, key: str = "setup_s") -> list[float]:
    return [run[f"{key}[{i}]"] for i in range(3)]


def later_cell(run: dict) -> str:
    """An economy line's later trials' ``setup_s``, listed."""
    return listed(setups(run)[1:], ".2f") + " s"


def from_launch_cells(run: dict) -> list[str]:
    """An economy line's first step and duty cycle, each counted from the sweep's launch."""
    return [f"{run['launch to first step']:.1f} s", f"{run['duty from launch']:.3f}"]


def joined(runs: list[dict], key: str, fmt: str) -> str:
    return ", ".join(format(r[key], fmt) for r in runs)


def ab_runs(experiment: str, arm: str, metric: str, source: str = "ab") -> list[float]:
    """One arm's per-run values of an ab.sh metric, from the experiment's long summary."""
    values = measures(experiment)
    runs = []
    while (source, f"{arm} {len(runs) + 1}", metric) in values:
        runs.append(values[source, f"{arm} {len(runs) + 1}", metric])
    return runs


def median_of(values: list[float], fmt: str, unit: str = "", bold: bool = False) -> str:
    median = f"{statistics.median(values):{fmt}}{unit}"
    return f"{f'**{median}**' if bold else median} ({span(values, fmt)})"


Runs = Callable[[str], list[float]]  # an arm ("base" or "new") -> its per-run values, in run order


def ab_metric(experiment: str, metric: str, source: str = "ab") -> Runs:
    return lambda arm: ab_runs(experiment, arm, metric, source)


def base_minus_new(runs: Runs) -> list[float]:
    """Each pair's BASE - NEW: as ab.sh printed it (from the unrounded figures) where it did, else from the runs."""
    return runs("base - new") or [b - n for b, n in zip(runs("base"), runs("new"))]


def signed(values: list[float], fmt: str) -> str:
    return ", ".join(format(v if v != 0 else 0.0, fmt) for v in values)  # no "-0.00"


def ab_cells(runs: Runs, fmt: str, unit: str = "", bold_new: bool = False) -> list[str]:
    return [median_of(runs("base"), fmt, unit), median_of(runs("new"), fmt, unit, bold=bold_new)]


def over_synthetic(trial: dict, trials: list[dict]) -> float:
    """A JPEG trial's throughput over the synthetic trial of the same sweep and ``decode``."""
    (synthetic,) = [r for r in trials if r["dataset"] == "synthetic" and r["decode"] == trial["decode"]]
    return trial["throughput"] / synthetic["throughput"]


def wait(value: float) -> str:
    return f"{value:.5f}" if value < 1e-4 else f"{value:.4f}" if value < 1e-3 else f"{value:.3g}"


def short_wait(value: float) -> str:
    return f"{value:.5f}" if value < 1e-4 else f"{value:.4f}" if value < 1e-3 else f"{value:.2g}"


def breakdown(trial: dict) -> dict[str, float]:
    """A trial's setup_breakdown: seconds from its start at which each phase of its set-up ended."""
    return json.loads(trial["setup_breakdown"])
