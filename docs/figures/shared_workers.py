"""Shared worker groups against a Train run per trial (docs/results/cpu-shared-workers, h200-shared-workers)."""

from __future__ import annotations

import json
import statistics

from . import RESULTS, figure, listed, measured, measures, records, span, summary, table
from .common import ab_runs, breakdown, economy_runs, median_of, over_synthetic, setups, wait
from .h100_start_up import cache_sweeps
from .h200_start_up import first_trial_run
from .jpeg import pipeline_rate, prefetch_trials


def sweeps_of(experiment: str, prefix: str) -> dict[str, list[dict]]:
    """The trials of each of ``experiment``'s sweeps whose name starts with ``prefix``, in their order of start."""
    out: dict[str, list[dict]] = {}
    for r in sorted(summary(experiment), key=lambda r: (r["sweep_dir"], r["started_at"])):
        if r["sweep_dir"].startswith(prefix):
            out.setdefault(r["sweep_dir"], []).append(r)
    return out


def economy(experiment: str, sweep: str) -> dict:
    """A sweep's own economy, as its sweep.json recorded it."""
    return json.loads((RESULTS / experiment / sweep / "sweep.json").read_text())["economy"]


def later_setups(sweeps: dict[str, list[dict]]) -> list[list[float]]:
    return [[r["setup_s"] for r in trials[1:]] for trials in sweeps.values()]


SHARED_MODES = {
    "cpu-shared-workers": ("shared_", "per_trial_"),
    "h200-shared-workers": ("h200_shared", "h200_per_trial"),
}


def shared_modes(experiment: str) -> tuple[dict[str, list[dict]], dict[str, list[dict]]]:
    shared, per_trial = SHARED_MODES[experiment]
    return sweeps_of(experiment, shared), sweeps_of(experiment, per_trial)


@figure("cpu-shared-workers")
def cpu_shared_workers() -> str:
    columns = []
    # the shared groups' sub-second figures to the hundredth, the per-trial runs' to the tenth
    for sweeps, (fmt, fine) in zip(shared_modes("cpu-shared-workers"), ((".2f", ".3f"), (".1f", ".2f"))):
        later = later_setups(sweeps)
        every = [v for values in later for v in values]
        economies = [economy("cpu-shared-workers", name) for name in sweeps]
        columns.append(
            [
                f"median {' and '.join(format(statistics.median(v), fmt) for v in later)} s "
                f"(all {len(every)}: {span(every, fmt)})",
                listed([trials[0]["setup_s"] for trials in sweeps.values()], ".1f") + " s",
                span([r["teardown_s"] for trials in sweeps.values() for r in trials], fine) + " s",
                listed([e["wall_s"] for e in economies], ".1f") + " s",
                listed([e["duty_cycle"] for e in economies], ".3f"),
            ]
        )
    names = ["later trials' `setup_s` (4 a sweep)", "first trial's `setup_s`", "`teardown_s`"]
    names += ["sweep wall time (`sweep.json` economy)", "duty cycle (two CPUs, 1-CPU trials: at most 0.5)"]
    rows = [[name, *values] for name, *values in zip(names, *columns)]
    return table(["", "shared worker groups (default)", "a Train run per trial"], rows, "lll")


@figure("cpu-shared-workers-accuracy")
def cpu_shared_workers_accuracy() -> str:
    by_batch: dict[int, set[float]] = {}
    for r in summary("cpu-shared-workers"):
        by_batch.setdefault(r["micro_batch_per_worker"], set()).add(round(r["val_accuracy"], 3))
    assert all(len(values) == 1 for values in by_batch.values()), by_batch  # the text says: identical
    return listed([values.pop() for _, values in sorted(by_batch.items())], ".3f")


@figure("h200-shared-workers")
def h200_shared_workers() -> str:
    columns = []
    for sweeps in shared_modes("h200-shared-workers"):
        later = later_setups(sweeps)
        every = [v for values in later for v in values]
        complete = {name: trials for name, trials in sweeps.items() if len(trials) == 3}
        walls = listed([economy("h200-shared-workers", name)["wall_s"] for name in complete], ".1f")
        duty = listed([economy("h200-shared-workers", name)["duty_cycle"] for name in complete], ".3f")
        whole = len(complete) == len(sweeps)
        columns.append(
            [
                f"{'; '.join(listed(v, '.2f' if whole else '.1f') for v in later)}: "
                f"**median {statistics.median(every):.{2 if whole else 1}f}** "
                f"({span(every, '.2f' if whole else '.1f')})",
                listed([trials[0]["setup_s"] for trials in sweeps.values()], ".1f"),
                span([r["teardown_s"] for trials in sweeps.values() for r in trials], ".3f" if whole else ".2f"),
                walls if whole else f"{walls} (the complete run)",
                f"**{duty}**" if whole else duty,
            ]
        )
    names = ["later trials' `setup_s` (s)", "first trial's `setup_s` (s)", "`teardown_s` (s)"]
    names += ["sweep wall time (s, `sweep.json` economy)", "**duty cycle**"]
    rows = [[name, *values] for name, *values in zip(names, *columns)]
    return table(["", "shared worker groups", "a Train run per trial"], rows, "lll")


@figure("h200-shared-workers-side-by-side")
def h200_shared_workers_side_by_side() -> str:
    columns = []
    for i, sweeps in enumerate(shared_modes("h200-shared-workers")):
        every = [v for values in later_setups(sweeps) for v in values]
        complete = [name for name, trials in sweeps.items() if len(trials) == 3]
        median = f"median {statistics.median(every):.{2 if i == 0 else 1}f} s"
        duty = listed([economy("h200-shared-workers", name)["duty_cycle"] for name in complete], ".2f")
        columns.append(
            [
                f"{f'**{median}**' if i == 0 else median} ({span(every, '.2f' if i == 0 else '.1f')}, "
                f"{len(every)} trials)",
                listed([trials[0]["setup_s"] for trials in sweeps.values()], ".1f") + " s",
                span([r["teardown_s"] for trials in sweeps.values() for r in trials], ".3f" if i == 0 else ".2f")
                + " s",
                listed([economy("h200-shared-workers", name)["wall_s"] for name in complete], ".1f") + " s",
                f"**{duty}**" if i == 0 else duty,
            ]
        )
    names = ["later trials' `setup_s`", "first trial's `setup_s`", "`teardown_s`", "sweep wall time", "**duty cycle**"]
    header = ["", "shared worker groups (default)", "a Train run per trial (`--no-shared-workers`)"]
    return table(header, [[name, *values] for name, *values in zip(names, *columns)], "lll")


@figure("cpu-shared-workers-side-by-side")
def cpu_shared_workers_side_by_side() -> str:
    shared, per_trial = shared_modes("cpu-shared-workers")

    def later(sweeps: dict[str, list[dict]], fmt: str) -> str:
        values = later_setups(sweeps)
        every = [v for run in values for v in run]
        return f"{' and '.join(format(statistics.median(v), fmt) for v in values)} s ({span(every, fmt)})"

    def each(sweeps: dict[str, list[dict]], key: str, fmt: str) -> str:
        return listed([economy("cpu-shared-workers", name)[key] for name in sweeps], fmt)

    def first(sweeps: dict[str, list[dict]]) -> str:
        return listed([trials[0]["setup_s"] for trials in sweeps.values()], ".1f")

    def teardown(sweeps: dict[str, list[dict]], fmt: str) -> str:
        return span([r["teardown_s"] for trials in sweeps.values() for r in trials], fmt)

    shared_later = later(shared, ".2f")
    return (
        f"later trials' `setup_s` median **{shared_later.split(' s ')[0]} s**\n{shared_later.split(' s ')[1]} "
        f"against {later(per_trial, '.1f')}; first trial {first(shared)} s against {first(per_trial)} s;\n"
        f"teardown {teardown(shared, '.3f')} s against {teardown(per_trial, '.2f')} s; sweep wall "
        f"{each(shared, 'wall_s', '.1f')} s against {each(per_trial, 'wall_s', '.1f')} s; duty cycle\n"
        f"{each(shared, 'duty_cycle', '.3f')} against "
        f"{span([economy('cpu-shared-workers', name)['duty_cycle'] for name in per_trial], '.2f')}"
    )


@figure("start-up-shared-against-per-trial")
def start_up_shared_against_per_trial() -> str:
    h200 = [later_setups(sweeps) for sweeps in shared_modes("h200-shared-workers")]
    cpu = [later_setups(sweeps) for sweeps in shared_modes("cpu-shared-workers")]
    cpu_walls = [
        [economy("cpu-shared-workers", name)["wall_s"] for name in sweeps]
        for sweeps in shared_modes("cpu-shared-workers")
    ]
    every = [[v for values in mode for v in values] for mode in (*h200, *cpu)]
    return (
        f"{statistics.median(every[0]):.2f} s against {statistics.median(every[1]):.1f} s on an H200, "
        f"{statistics.median(every[2]):.2f} s against {span([statistics.median(v) for v in cpu[1]], '.0f')} s on "
        f"2 CPU cores; the embedded default takes {span(cpu_walls[0], '.1f')} s instead of "
        f"{span(cpu_walls[1], '.1f')} s"
    )


@figure("issue-13-targets")
def issue_13_targets() -> str:
    before_h200 = shared_modes("h200-shared-workers")[1]
    at_8fca4fc = [r for tag, r in economy_runs("h200-torch-free-controller").items() if tag.startswith("new")]
    at_8fca4fc += [economy_runs("h200-rank-preload")["mid1"]]
    cache = cache_sweeps(True)
    cache_later = [v for r in cache for v in json.loads(r["later_setup_s"])]
    before_cpu = shared_modes("cpu-shared-workers")[1]
    cpu_economies = [economy("cpu-shared-workers", name) for name in before_cpu]

    def cpu_now(metric: str, fmt: str, unit: str = "", bold: bool = False) -> str:
        return median_of(ab_runs("cpu-rank-preload", "base", metric), fmt, unit, bold)

    h200_later = [v for values in later_setups(before_h200) for v in values]
    rows = [
        [
            "later trials' `setup_s`",
            median_of(h200_later, ".1f", " s"),
            median_of([v for r in at_8fca4fc for v in setups(r)[1:]], ".2f", " s", bold=True),
            median_of(cache_later, ".2f", " s", bold=True),
            "<= 5 s",
            span([statistics.median(v) for v in later_setups(before_cpu)], ".1f") + " s",
            cpu_now("second setup_s", ".2f", " s", bold=True),
            "<= 6 s",
        ],
        [
            "`teardown_s`",
            span([r["teardown_s"] for trials in before_h200.values() for r in trials], ".2f") + " s",
            f"**<= {max(v for r in at_8fca4fc for v in setups(r, 'teardown_s')):.3f} s**",
            f"**<= {max(r['max_teardown_s'] for r in cache):.3f} s**",
            "<= 1 s",
            span([r["teardown_s"] for trials in before_cpu.values() for r in trials], ".2f") + " s",
            "not kept",
            "<= 1 s",
        ],
        [
            "first trial's `setup_s`",
            "not kept",
            median_of([r["setup_s[0]"] for r in at_8fca4fc], ".2f", " s"),
            median_of([r["first_setup_s"] for r in cache], ".2f", " s"),
            "",
            span([trials[0]["setup_s"] for trials in before_cpu.values()], ".1f") + " s",
            cpu_now("first setup_s", ".2f", " s"),
            "",
        ],
        [
            "duty cycle from the first trial",
            listed(
                [
                    economy("h200-shared-workers", name)["duty_cycle"]
                    for name in before_h200
                    if len(before_h200[name]) == 3
                ],
                ".2f",
            ),
            median_of([r["duty"] for r in at_8fca4fc], ".3f"),
            median_of([r["duty_cycle"] for r in cache], ".3f", bold=True),
            ">= 0.85",
            span([e["duty_cycle"] for e in cpu_economies], ".2f"),
            cpu_now("duty_cycle", ".3f"),
            "(at most 0.5: 1-CPU trials on 2 CPUs)",
        ],
        [
            "duty cycle from the launch",
            "not recorded",
            "not recorded",
            median_of([r["duty_cycle_from_launch"] for r in cache], ".3f"),
            "",
            "not recorded",
            "not recorded",
            "",
        ],
    ]
    header = ["", "H200 before", "H200 at 8fca4fc", "H100, with the bytecode cache", "target"]
    return table([*header, "2 CPU cores before", "2 CPU cores now", "target"], rows, "lrrrrrrr")


@figure("trial-start-costs")
def trial_start_costs() -> str:
    cpu = [v for values in later_setups(shared_modes("cpu-shared-workers")[1]) for v in values]
    h200 = [v for values in later_setups(shared_modes("h200-shared-workers")[1]) for v in values]
    return f"{span(cpu, '.0f')} s on 2 CPU cores, {span(h200, '.0f')} s on an H200"


@figure("h200-jpeg-prefetch-shared")
def h200_jpeg_prefetch_shared() -> str:
    synthetic, jpeg = prefetch_trials("h200_jpeg_shared")
    later = [v for values in later_setups(shared_modes("h200-shared-workers")[0]) for v in values]
    return (
        f"{synthetic['throughput']:.0f} and {jpeg['throughput']:.0f}\nsamples/s, "
        f"**{jpeg['throughput'] / synthetic['throughput']:.3f}x**, data wait **{wait(jpeg['data_wait_fraction'])}**; "
        f"the imagefolder trial, the sweep's second, set up in\n**{jpeg['setup_s']:.2f} s**, about "
        f"{jpeg['setup_s'] - statistics.median(later):.1f} s over a later synthetic trial's {span(later, '.2f')} s"
    )


@figure("h200-first-trial")
def h200_first_trial() -> str:
    trials, own, floors = first_trial_run()
    shared = shared_modes("h200-shared-workers")[0]
    later = [t["setup_s"] for t in trials[1:]]
    shared_later = [v for values in later_setups(shared) for v in values]
    complete = [name for name, rows in shared.items() if len(rows) == 3]
    rows = [
        [
            "first trial's `setup_s`",
            f"{trials[0]['setup_s']:.1f} s",
            listed([rows[0]["setup_s"] for rows in shared.values()], ".1f") + " s",
        ],
        [
            "later trials' `setup_s`",
            f"{listed(later, '.2f')} s (median {statistics.median(later):.2f})",
            span(shared_later, ".2f") + " s",
        ],
        [
            "`teardown_s`",
            span([t["teardown_s"] for t in trials], ".3f") + " s",
            span([r["teardown_s"] for rows in shared.values() for r in rows], ".3f") + " s",
        ],
        [
            "sweep wall time",
            f"{own['wall_s']:.1f} s",
            listed([economy("h200-shared-workers", name)["wall_s"] for name in complete], ".1f") + " s",
        ],
        [
            "**duty cycle**",
            f"**{own['duty_cycle']:.3f}**",
            listed([economy("h200-shared-workers", name)["duty_cycle"] for name in complete], ".3f"),
        ],
        ["cold-process floor", listed(floors, ".1f") + " s", "not measured that day"],
    ]
    return table(["", "this run", "2026-12-03 (`docs/results/h200-shared-workers/`, other hosts)"], rows, "lrr")


@figure("h200-first-trial-targets")
def h200_first_trial_targets() -> str:
    trials, own, floors = first_trial_run()
    first = trials[0]["setup_s"]
    before = [rows[0]["setup_s"] for rows in shared_modes("h200-shared-workers")[0].values()]
    cpu_saved = measured("cpu-first-trial", "ab", "first-trial difference")
    timed = own["duty_cycle"] * own["wall_s"]
    return (
        f"(the\nfirst trial fell by {min(before) - first:.0f} s where the change saved {span(cpu_saved, '.1f')} s on 2 "
        f"CPU cores), so the columns are not a\nmeasure of the change. Against issue 13 on this host: later-trial "
        f"`setup_s` <= 5 s and `teardown_s` <= 1 s\nmet; first trial at most the floor + 3 s "
        f"({span([f + 3 for f in floors], '.1f')} s) not met: {first:.1f} s, floor + "
        f"{span([first - f for f in floors], '.0f')} s; duty cycle\n>= 0.85 not met: {own['duty_cycle']:.3f}. For this "
        f"sweep's {timed:.1f} s of timed training ({own['duty_cycle']:.3f} x {own['wall_s']:.1f} s), 0.85 allows "
        f"{timed / 0.85 - timed:.1f} s of\neverything else in the sweep's wall time, the first trial's start included: "
        f"less than this host's\nfloor ({span(floors, '.1f')} s)"
    )


@figure("h200-first-start-cost")
def h200_first_start_cost() -> str:
    shared, per_trial = shared_modes("h200-shared-workers")
    firsts = [trials[0]["setup_s"] for trials in shared.values()]
    later = [v for values in later_setups(per_trial) for v in values]
    floors = [
        run["since_launch_s.first step"] if "since_launch_s.first step" in run else run["first step"]
        for source in ("floor1", "floor2")
        for run in records("h200-duty-cycle", source, "summary-logs.csv").values()
        if "first step" in run or "since_launch_s.first step" in run
    ]
    complete = [name for name, trials in shared.items() if len(trials) == 3]
    duties = [economy("h200-shared-workers", name)["duty_cycle"] for name in complete]
    first = economy("h200-shared-workers", complete[0])
    timed = first["duty_cycle"] * first["wall_s"]  # the first sweep's timed device-seconds
    return (
        f"{statistics.median(firsts):.0f} s on hosts where a Train run per trial took {statistics.median(later):.1f} s "
        f"for a later\n"
        f"trial (on the day of `docs/results/h200-duty-cycle/` a figure not kept; its cold-process floor was "
        f"{span(floors, '.1f')} s).\nThat first start is what keeps the duty cycle at {span(duties, '.2f')}: for "
        f"{timed:.0f} s of timed training, 0.85 needs\nevery overhead of the sweep (first start, warm-up, validation) "
        f"under {timed / 0.85 - timed:.0f} s"
    )


@figure("h200-jpeg-shared-setup")
def h200_jpeg_shared_setup() -> str:
    _, jpeg = prefetch_trials("h200_jpeg_shared")
    b = breakdown(jpeg)
    later = [v for values in later_setups(shared_modes("h200-shared-workers")[0]) for v in values]
    return (
        f"started in {jpeg['setup_s']:.2f} s: index {b['data_loaded'] - b['worker_started']:.2f} s, first batch "
        f"{b['first_step'] - b['engine_ready']:.2f} s (`setup_breakdown`); later synthetic\ntrials with shared workers "
        f"start in {span(later, '.2f')} s (`docs/results/h200-shared-workers/`), so the folder adds\n**about "
        f"{jpeg['setup_s'] - max(later):.1f}-{jpeg['setup_s'] - min(later):.1f} s**"
    )


@figure("h200-shared-workers-throughput")
def h200_shared_workers_throughput() -> str:
    shared, per_trial = shared_modes("h200-shared-workers")

    def rates(sweeps: dict[str, list[dict]], batch: int) -> str:
        return " and ".join(
            f"{r['throughput']:.0f}"
            for trials in sweeps.values()
            for r in trials
            if r["micro_batch_per_worker"] == batch
        )

    memory = sorted({round(r["peak_mem_gib"], 2) for trials in shared.values() for r in trials})
    return (
        f"micro batch 128: {rates(shared, 128)}\nagainst {rates(per_trial, 128)} samples/s; 256: {rates(shared, 256)} "
        f"against {rates(per_trial, 256)}; 64 (each sweep's first trial):\n{rates(shared, 64)} against "
        f"{rates(per_trial, 64)}. Peak memory per trial is the same to 0.01 GiB ({listed(memory, '.2f')}\nGiB)"
    )


@figure("h200-shared-workers-breakdown")
def h200_shared_workers_breakdown() -> str:
    shared, per_trial = shared_modes("h200-shared-workers")
    later = [breakdown(r) for trials in shared.values() for r in trials[1:]]
    per = [breakdown(r) for trials in per_trial.values() for r in trials[1:]]

    def phase(phases: list[dict[str, float]], end: str, start: str, fmt: str = ".2f") -> str:
        return span([b[end] - b[start] for b in phases], fmt)

    return (
        f"a worker picks it up at {span([b['worker_started'] for b in later], '.2f')} s; model "
        f"{phase(later, 'model_built', 'data_loaded')} s, engine {phase(later, 'engine_ready', 'model_built')} s.\n"
        f"In a run per trial the worker starts at {span([b['worker_started'] for b in per], '.1f')} s (trial actor, "
        f"Train controller, placement\ngroup, worker actor, process group, imports), the model is built "
        f"{phase(per, 'model_built', 'data_loaded', '.1f')} s later and the engine\n"
        f"{phase(per, 'engine_ready', 'model_built', '.1f')} s after that"
    )


@figure("h200-shared-workers-targets")
def h200_shared_workers_targets() -> str:
    shared, per_trial = shared_modes("h200-shared-workers")
    later = [v for values in later_setups(shared) for v in values]
    per_later = [v for values in later_setups(per_trial) for v in values]
    before = statistics.median(r["setup_s"] for r in summary("h200-duty-cycle"))
    teardowns = [r["teardown_s"] for rows in shared.values() for r in rows]
    floors = [v for (_, _, q), v in measures("h200-duty-cycle", "summary-logs.csv").items() if q == "first step"]
    firsts = [rows[0]["setup_s"] for mode in (shared, per_trial) for rows in mode.values()]
    duties = [economy("h200-shared-workers", name)["duty_cycle"] for name in shared]
    (per_trial_duty,) = [
        economy("h200-shared-workers", n)["duty_cycle"] for n, rows in per_trial.items() if len(rows) == 3
    ]
    walls = [economy("h200-shared-workers", name)["wall_s"] for name in shared]
    timed = [sum(r["timed_s"] for r in rows) for rows in shared.values()]
    return (
        f"- median later-trial `setup_s` <= 5 s: **{statistics.median(later):.2f} s, met** (was "
        f"{statistics.median(per_later):.1f} s side by side, {before:.1f} s in\n  `docs/results/h200-duty-cycle/`).\n"
        f"- `teardown_s` <= 1 s: **met** ({span(teardowns, '.3f')} s).\n"
        f"- first trial at most the cold-process floor + 3 s: **not met**. The floor was {span(floors, '.1f')} s on\n"
        f"  another day (`docs/results/h200-duty-cycle/`); here the first trial took {min(firsts):.0f} s in both "
        "modes:\n"
        "  its group's actor, Train controller and worker start one after another, each importing torch\n"
        "  (the worker also timm and DeepSpeed), on a host where process starts were slower than on that day\n"
        "  (the per-trial runs' later trials too; the figures that compared the two days' processes are not kept).\n"
        f"- duty cycle >= 0.85: **not met**, {span(duties, '.2f')} (from {per_trial_duty:.2f}). What is left is the "
        f"first trial's cold\n  start: {min(firsts):.0f} of the {span(walls, '.0f')} s. For these sweeps "
        f"({span(timed, '.0f')} s of timed training) 0.85 needs all overhead,\n  first start, warm-up and validation "
        f"included, under {span([t / 0.85 - t for t in timed], '.0f')} s, less than the cold-process floor\n  alone; "
        "it is within reach of sweeps whose trials train longer or are more numerous."
    )


@figure("h200-jpeg-prefetch-targets")
def h200_jpeg_prefetch_targets() -> str:
    trials = prefetch_trials()
    shared_synthetic, shared_jpeg = prefetch_trials("h200_jpeg_shared")
    (gpu,) = [r for r in trials if r["dataset"] != "synthetic" and r["decode"] == "gpu"]
    (cpu,) = [r for r in trials if r["dataset"] != "synthetic" and r["decode"] == "cpu"]
    synthetic = {r["decode"]: r for r in trials if r["dataset"] == "synthetic"}
    first, later = [r for r in trials if r["dataset"] == "synthetic"]
    shared_later = [v for values in later_setups(shared_modes("h200-shared-workers")[0]) for v in values]
    b = breakdown(gpu)
    own = (b["data_loaded"] - b["worker_started"]) + (b["first_step"] - b["engine_ready"])
    best = {
        "gpu": max(
            ("prepared copy", pipeline_rate("pipe_gpu_prep")),
            ("source", pipeline_rate("pipe_gpu_src")),
            key=lambda x: x[1],
        ),
        "cpu": max(
            ("prepared copy", pipeline_rate("pipe_cpu_prep")),
            ("source", pipeline_rate("pipe_cpu_src")),
            key=lambda x: x[1],
        ),
    }
    alone = {
        d: f"{rate:,.0f} img/s ({where}), {rate / synthetic[d]['throughput']:.1f}x: **not met**"
        for d, (where, rate) in best.items()
    }
    rows = [
        [
            "JPEG throughput >= 0.95x synthetic",
            f"{over_synthetic(gpu, trials):.3f}x: **not met**",
            f"{over_synthetic(cpu, trials):.3f}x and "
            f"{shared_jpeg['throughput'] / shared_synthetic['throughput']:.3f}x in two runs: **at the target**",
        ],
        [
            "`data_wait_fraction` <= 0.03",
            f"{wait(gpu['data_wait_fraction'])}: **not met**",
            f"{wait(cpu['data_wait_fraction'])}: **met**",
        ],
        ["pipeline alone >= 8x one GPU's model rate (2,700 x 8 = 21,600 img/s)", alone["gpu"], alone["cpu"]],
        [
            "later-trial setup at most 3 s over a synthetic trial",
            f"`setup_s` {gpu['setup_s'] - later['setup_s']:.1f} s over the later synthetic trial in a Train run per "
            f"trial: **not met** as measured (the folder's own phases: {own:.2f} s)",
            f"with shared worker groups {shared_jpeg['setup_s']:.2f} s against {span(shared_later, '.2f')} s: **met**",
        ],
    ]
    return table(["target", "gpu decode", "cpu decode"], rows, "lll")
