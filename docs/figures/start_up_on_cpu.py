"""A/B runs of the first trial's start-up on 2 CPU cores (docs/results/cpu-torch-free-controller, cpu-gc-freeze)."""

from __future__ import annotations

import statistics

from . import figure, measures, table
from .common import Runs, ab_cells, ab_metric, base_minus_new, signed


def timeline_gap(experiment: str, start: str, end: str) -> Runs:
    """Per run, seconds from one event of timeline.txt to another (runs tagged base-1, new-1, ...)."""

    def runs(arm: str) -> list[float]:
        events = measures(experiment)
        out = []
        while ("timeline", f"{arm}-{len(out) + 1}", end) in events:
            tag = f"{arm}-{len(out) + 1}"
            out.append(events["timeline", tag, end] - events["timeline", tag, start])
        return out

    return runs


def paired_table(rows: list[tuple[str, Runs, str, str, bool, str | None]]) -> str:
    """BASE, NEW and each pair's BASE - NEW; a row: label, its runs, format, unit, NEW in bold, the pairs' format."""
    body = [
        [label, *ab_cells(runs, fmt, unit, bold), signed(base_minus_new(runs), pairs) if pairs else ""]
        for label, runs, fmt, unit, bold, pairs in rows
    ]
    return table(["", "BASE", "NEW", "paired BASE - NEW"], body, "lrrl")


@figure("cpu-torch-free-controller")
def cpu_torch_free_controller() -> str:
    def metric(name: str) -> Runs:
        return ab_metric("cpu-torch-free-controller", name)

    controller = timeline_gap(
        "cpu-torch-free-controller", "process started: TrainController", "process started: RayTrainWorker"
    )
    return paired_table(
        [
            ("Train's controller process start to the worker's", controller, ".2f", " s", True, "+.2f"),
            ("first trial's `setup_s`", metric("first setup_s"), ".2f", " s", True, "+.2f"),
            ("duty cycle", metric("duty_cycle"), ".3f", "", True, None),
            ("launch to first step", metric("launch to first step"), ".1f", " s", False, "+.2f"),
            ("duty cycle from launch", metric("duty from launch"), ".3f", "", False, None),
        ]
    )


@figure("cpu-gc-freeze")
def cpu_gc_freeze() -> str:
    def metric(name: str) -> Runs:
        return ab_metric("cpu-gc-freeze", name)

    rows = [
        (
            "later trials' first step after the trial's start, on the rank (`setup_breakdown`), median of each sweep",
            metric("later trials' first step (rank's clock)"),
            ".3f",
            " s",
            True,
            ".2f",
        ),
        ("second trial's `setup_s`", metric("second setup_s"), ".3f", " s", False, ".2f"),
        ("first trial's `setup_s`", metric("first setup_s"), ".3g", " s", False, ".3g"),
        ("duty cycle", metric("duty_cycle"), ".3f", "", False, ".2f"),
    ]
    body = [
        [label, *ab_cells(runs, fmt, unit, bold), signed(base_minus_new(runs), pairs)]
        for label, runs, fmt, unit, bold, pairs in rows
    ]
    return table(["", "BASE", "NEW", "BASE - NEW, per pair"], body, "lrrl")


@figure("cpu-controller-sooner")
def cpu_controller_sooner() -> str:
    gaps = timeline_gap(
        "cpu-torch-free-controller", "process started: TrainController", "process started: RayTrainWorker"
    )
    return f"{statistics.median(gaps('base')) - statistics.median(gaps('new')):.1f} s"


@figure("cpu-gc-freeze-rebuild")
def cpu_gc_freeze_rebuild() -> str:
    first = base_minus_new(ab_metric("cpu-gc-freeze", "first setup_s"))[0]
    return f"{first:.0f} s"


@figure("cpu-gc-freeze-sooner")
def cpu_gc_freeze_sooner() -> str:
    pairs = base_minus_new(ab_metric("cpu-gc-freeze", "later trials' first step (rank's clock)"))
    assert all(v > 0 for v in pairs), pairs  # the docs say: sooner, in every pair
    return f"{statistics.median(pairs):.2f} s"
