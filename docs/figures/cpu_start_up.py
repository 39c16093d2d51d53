"""Issue 13's A/B runs on 2 CPU cores: the first trial's start-up and what was tried for it
(docs/results/cpu-first-trial, cpu-no-prestart, cpu-rank-preload, cpu-torch-free-controller, cpu-gc-freeze,
tried-preload)."""

from __future__ import annotations

import statistics

from . import count, figure, listed, measured, measures, span, table
from .common import Runs, ab_cells, ab_metric, base_minus_new, every_pair, median_of, signed


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


def first_trial_rounds(source: str, fmt: str, ordered: bool) -> str:
    diffs = measured("cpu-first-trial", source, "first-trial difference")
    assert all(v > 0 for v in diffs), diffs  # the text says: every round faster
    return f"{listed(sorted(diffs) if ordered else diffs, fmt)} s: every round faster"


def cpu_first_trial(source: str, before: str, after: str, fmt: str, ordered: bool) -> str:
    def metric(name: str) -> Runs:
        return ab_metric("cpu-first-trial", name, source)

    first = metric("first setup_s")
    rows = [
        [f"first trial's `setup_s`, median of {len(first('base'))}", *ab_cells(first, fmt, " s", True)],
        ["first-trial difference, each round (before - after)", "", first_trial_rounds(source, fmt, ordered)],
        ["second trial's `setup_s`", *ab_cells(metric("second setup_s"), ".2f", " s")],
        ["sweep wall time", *ab_cells(metric("wall_s"), ".1f", " s")],
        ["duty cycle", *ab_cells(metric("duty_cycle"), ".3f", bold_new=True)],
    ]
    return table(["", f"before ({before})", f"after ({after})"], rows, "lrr")


@figure("cpu-first-trial")
def cpu_first_trial_c7cca5e() -> str:
    return cpu_first_trial("ab", "28ddd68", "c7cca5e", ".1f", ordered=True)


@figure("cpu-first-trial-train-runs")
def cpu_first_trial_f563bb2() -> str:
    return cpu_first_trial("ab-train-runs", "8b2dea2", "f563bb2", ".2f", ordered=False)


def paired_table(rows: list[tuple[str, Runs, str, str, bool, str | None]]) -> str:
    """BASE, NEW and each pair's BASE - NEW; a row: label, its runs, format, unit, NEW in bold, the pairs' format."""
    body = [
        [label, *ab_cells(runs, fmt, unit, bold), signed(base_minus_new(runs), pairs) if pairs else ""]
        for label, runs, fmt, unit, bold, pairs in rows
    ]
    return table(["", "BASE", "NEW", "paired BASE - NEW"], body, "lrrl")


@figure("cpu-no-prestart")
def cpu_no_prestart() -> str:
    def metric(name: str) -> Runs:
        return ab_metric("cpu-no-prestart", name)

    return paired_table(
        [
            ("first trial's `setup_s`", metric("first setup_s"), ".1f", " s", False, "+.1f"),
            ("launch to first step", metric("launch to first step"), ".1f", " s", False, "+.1f"),
            ("duty cycle", metric("duty_cycle"), ".3f", "", False, None),
            ("duty cycle from launch", metric("duty from launch"), ".3f", "", False, None),
        ]
    )


@figure("cpu-rank-preload")
def cpu_rank_preload() -> str:
    def metric(name: str) -> Runs:
        return ab_metric("cpu-rank-preload", name)

    worker = timeline_gap("cpu-rank-preload", "process started: RayTrainWorker", "its first step")
    return paired_table(
        [
            ("worker process start to the first step", worker, ".2f", " s", False, "+.2f"),
            ("first trial's `setup_s`", metric("first setup_s"), ".2f", " s", False, "+.2f"),
            ("second trial's `setup_s`", metric("second setup_s"), ".2f", " s", False, "+.2f"),
            ("duty cycle", metric("duty_cycle"), ".3f", "", False, None),
            ("launch to first step", metric("launch to first step"), ".1f", " s", False, "+.2f"),
            ("duty cycle from launch", metric("duty from launch"), ".3f", "", False, None),
        ]
    )


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


@figure("tried-preload")
def tried_preload() -> str:
    first = ab_metric("tried-preload", "first setup_s", "cpu-ab")
    diffs = measured("tried-preload", "cpu-ab", "first-trial difference")
    slower = sum(v < 0 for v in diffs)
    rows = [
        [
            f"2 CPU cores, first trial's `setup_s`, {len(diffs)} alternated pairs (`cpu-ab.sh`, `cpu-ab.log`)",
            median_of(first("base"), ".1f", " s", bold=True),
            median_of(first("new"), ".1f", " s"),
        ],
        ["paired difference (without - with), s", "", f"{signed(diffs, '+.2f')}: slower in {slower} of {len(diffs)}"],
        [
            "H200, issue 13's `batch_grid`, first trial's `setup_s` (`h200-run.sh`, one pair that finished)",
            f"{measured('tried-preload', 'h200-base1', 'setup_s')[0]:.2f} s",
            f"{measured('tried-preload', 'h200-new2', 'setup_s')[0]:.2f} s",
        ],
    ]
    return table(["", "without (f563bb2)", "with the preload"], rows, "lrr")


@figure("tried-preload-h200-pair")
def tried_preload_h200_pair() -> str:
    base, new = (measured("tried-preload", source, "setup_s")[0] for source in ("h200-base1", "h200-new2"))
    return f"{abs(base - new):.1f} s"


@figure("tried-preload-h200-floor")
def tried_preload_h200_floor() -> str:
    return f"{measured('tried-preload', 'h200-floor', 'phases.first step')[0]:.1f} s"


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


@figure("cpu-first-trial-history")
def cpu_first_trial_history() -> str:
    first = ab_metric("cpu-first-trial", "first setup_s")
    duty = ab_metric("cpu-first-trial", "duty_cycle")
    diffs = measured("cpu-first-trial", "ab", "first-trial difference")
    assert all(v > 0 for v in diffs)  # the text says: faster in every pair
    return (
        f"the first trial's `setup_s` {median_of(first('base'), '.1f', ' s')} -> "
        f"{median_of(first('new'), '.1f', ' s', bold=True)}, faster in every one of the {count(len(diffs))} pairs "
        f"(by {span(diffs, '.1f')} s); duty cycle {median_of(duty('base'), '.3f')} ->\n"
        f"{median_of(duty('new'), '.3f', bold=True)}"
    )


@figure("cpu-train-runs-history")
def cpu_train_runs_history() -> str:
    first = ab_metric("cpu-first-trial", "first setup_s", "ab-train-runs")
    duty = ab_metric("cpu-first-trial", "duty_cycle", "ab-train-runs")
    diffs = measured("cpu-first-trial", "ab-train-runs", "first-trial difference")
    assert all(v > 0 for v in diffs)
    return (
        f"first trial {median_of(first('base'), '.2f', ' s')} -> {median_of(first('new'), '.2f', ' s', bold=True)}, "
        f"faster in every pair (by {span(diffs, '.1f')} s); duty cycle {statistics.median(duty('base')):.3f} -> "
        f"{statistics.median(duty('new')):.3f}"
    )


@figure("cpu-no-prestart-history")
def cpu_no_prestart_history() -> str:
    def runs(metric: str) -> Runs:
        return ab_metric("cpu-no-prestart", metric)

    first, duty, launch = runs("first setup_s"), runs("duty_cycle"), runs("duty from launch")
    return (
        f"first trial {median_of(first('base'), '.1f', ' s')} against {median_of(first('new'), '.1f', ' s')}, duty "
        f"cycle {statistics.median(duty('base')):.3f} against {statistics.median(duty('new')):.3f}, from launch\n"
        f"{statistics.median(launch('base')):.3f} against {statistics.median(launch('new')):.3f}"
    )


@figure("cpu-torch-free-controller-history")
def cpu_torch_free_controller_history() -> str:
    def runs(metric: str) -> Runs:
        return ab_metric("cpu-torch-free-controller", metric)

    gaps = timeline_gap(
        "cpu-torch-free-controller", "process started: TrainController", "process started: RayTrainWorker"
    )
    first, duty, step = runs("first setup_s"), runs("duty_cycle"), runs("launch to first step")
    every_pair(base_minus_new(gaps), "sooner", ".2f")
    every_pair(base_minus_new(first), "lower", ".2f")
    base_gap, new_gap = gaps("base"), gaps("new")
    return (
        f"**{statistics.median(base_gap) - statistics.median(new_gap):.1f} s\nsooner** "
        f"({statistics.median(base_gap):.2f} s, "
        f"{span(base_gap, '.2f')}, against {statistics.median(new_gap):.2f} s, {span(new_gap, '.2f')}, after its own "
        f"start, in every pair; first\nreported from the `.out` files' ctimes (a figure not kept), which later "
        "writes move: "
        f"`timeline.py` now reads each\nprocess's start from its core-worker log), the first trial's `setup_s`\n"
        f"{median_of(first('base'), '.2f', ' s')} -> {median_of(first('new'), '.2f', ' s', bold=True)}, lower in every "
        f"pair, duty cycle {statistics.median(duty('base')):.3f} -> {statistics.median(duty('new')):.3f}; from launch\n"
        f"no difference beyond the spread (first step {statistics.median(step('base')):.1f} against "
        f"{statistics.median(step('new')):.1f} s)"
    )


@figure("tried-preload-history")
def tried_preload_history() -> str:
    first = ab_metric("tried-preload", "first setup_s", "cpu-ab")
    diffs = measured("tried-preload", "cpu-ab", "first-trial difference")
    base = measured("tried-preload", "h200-base1", "setup_s")[0]
    new = measured("tried-preload", "h200-new2", "setup_s")[0]
    return (
        f"slower in {sum(v < 0 for v in diffs)}\nof {len(diffs)} alternated pairs (median "
        f"{statistics.median(first('base')):.1f} -> {statistics.median(first('new')):.1f} s); on an H200, one pair, "
        f"{base:.2f} -> {new:.2f} s"
    )


@figure("cpu-rank-preload-history")
def cpu_rank_preload_history() -> str:
    worker = timeline_gap("cpu-rank-preload", "process started: RayTrainWorker", "its first step")
    first = ab_metric("cpu-rank-preload", "first setup_s")
    duty = ab_metric("cpu-rank-preload", "duty_cycle")
    gains = base_minus_new(worker)
    assert all(g > 0 for g in gains), gains  # the text says: sooner in every pair
    return (
        f"worker's process start to its first step came {span(gains, '.1f')} s sooner in every pair but the first "
        f"trial's `setup_s`\n({statistics.median(first('base')):.2f} against {statistics.median(first('new')):.2f} s) "
        f"and the duty cycle ({statistics.median(duty('base')):.3f} against {statistics.median(duty('new')):.3f})"
    )


@figure("cpu-rank-preload-worker-gains")
def cpu_rank_preload_worker_gains() -> str:
    gains = base_minus_new(timeline_gap("cpu-rank-preload", "process started: RayTrainWorker", "its first step"))
    assert all(g > 0 for g in gains), gains  # the text says: sooner in every pair
    return f"{span(gains, '.1f')} s"


@figure("cpu-rank-preload-second-trial")
def cpu_rank_preload_second_trial() -> str:
    higher = [-d for d in base_minus_new(ab_metric("cpu-rank-preload", "second setup_s"))]
    assert all(h > 0 for h in higher), higher  # the text says: higher in every pair
    return f"{span(higher, '.1f')} s"


@figure("cpu-no-prestart-pairs-3-4")
def cpu_no_prestart_pairs_3_4() -> str:
    step = ab_metric("cpu-no-prestart", "launch to first step")
    return f"BASE {listed(step('base')[2:4], '.1f')} s; NEW {listed(step('new')[2:4], '.1f')} s"
