"""The first trial against the cold-process floor on H200 hosts (docs/results/h200-device-warm,
h200-torch-free-controller, h200-rank-preload)."""

from __future__ import annotations

import statistics

from . import figure, records, span, table
from .common import economy_runs, from_launch_cells, later_cell, median_of, setups, signed

# The margin over a cold floor the text counts the first trials within (the target is + 3 s over a warm one).

# the sweeps of the code since the first group starts with Ray, on H200 hosts
SINCE_EARLY_GROUP = {
    "h200-early-group": ("new2", "new3", "new4", "new5"),
    "h200-device-warm": None,
    "h200-torch-free-controller": None,
    "h200-rank-preload": None,
}


@figure("h200-duty-cycles-since-early-group")
def h200_duty_cycles_since_early_group() -> str:
    runs = [
        r
        for experiment, tags in SINCE_EARLY_GROUP.items()
        for tag, r in economy_runs(experiment).items()
        if tags is None or tag in tags
    ]
    return (
        f"{span([r['duty'] for r in runs], '.2f')} of the time from the first trial's start,\ndepending on the host "
        f"({span([r['duty from launch'] for r in runs], '.2f')} from launch"
    )


@figure("h200-torch-free-controller")
def h200_torch_free_controller() -> str:
    notes = {"new1": " (the host's first sweep)"}
    body = []
    for tag, r in economy_runs("h200-torch-free-controller").items():
        duty = f"{r['duty']:.3f}"
        body.append(
            [
                tag + notes.get(tag, ""),
                f"{r['setup_s[0]']:.2f} s",
                later_cell(r),
                f"**{duty}**" if r["duty"] >= 0.84 else duty,
                *from_launch_cells(r),
            ]
        )
    header = ["sweep (run order)", "first trial's `setup_s`", "later `setup_s`", "duty cycle", "first step from launch"]
    return table([*header, "duty from launch"], body, "lrrrrr")


@figure("h200-rank-preload")
def h200_rank_preload() -> str:
    runs = economy_runs("h200-rank-preload")
    gaps = records("h200-rank-preload", "gaps")
    best = max(runs, key=lambda tag: runs[tag]["duty"])
    body = []
    for tag, r in runs.items():
        bold = "**{}**" if tag == best else "{}"
        body.append(
            [
                tag + (" (preload)" if tag.startswith("new") else ""),
                bold.format(f"{r['setup_s[0]']:.2f} s"),
                later_cell(r),
                f"{gaps[f'{tag} trial 0']['warmup']:.2f} s",
                bold.format(f"{r['duty']:.3f}"),
                *from_launch_cells(r),
            ]
        )
    header = ["sweep (run order)", "first trial's `setup_s`", "later `setup_s`", "warm-up steps, first trial"]
    return table([*header, "duty cycle", "first step from launch", "duty from launch"], body, "lrrrrrr")


@figure("h200-device-warm-sweeps")
def h200_device_warm_sweeps() -> str:
    runs = economy_runs("h200-device-warm")
    body = []
    for call in ("call1", "call2", "call3"):
        of_call = {tag: r for tag, r in runs.items() if r["call"] == call}
        cells = []
        for kind in ("base", "new", "nowarm"):
            found = [r for tag, r in of_call.items() if tag.startswith(kind)]
            if not found:
                cells.append("")
                continue
            (r,) = found
            duty = f"{r['duty']:.3f}"
            duty = f"**{duty}**" if r["duty"] >= 0.85 else duty  # issue 13's target reached
            cells.append(f"{r['setup_s[0]']:.2f} s, {r['launch to first step']:.1f} s, {duty}")
        body.append([f"{call[-1]} (`{' '.join(of_call)}`)", *cells])
    return table(["host (call)", "base (c01db49)", "new (with the thread)", "nowarm (without)"], body, "llll")


@figure("h200-controller-to-worker")
def h200_controller_to_worker() -> str:
    starts = records("h200-device-warm", "call4/timeline")["new4"]
    return f"{starts['process started: RayTrainWorker'] - starts['process started: TrainController']:.1f} s"


@figure("h200-device-warm-probe")
def h200_device_warm_probe() -> str:
    modes: dict[str, list[dict[str, float]]] = {"plain": [], "warm": []}
    for record, run in records("h200-device-warm", "call3/probe").items():
        modes[record.split()[1]].append(run)  # "mode plain (line 1)": pairs alternated, k-th of each a pair

    metrics = {
        "first step": lambda r: r["first step"],
        "imports (after the process group)": lambda r: r["imports"] - r["process group, device"],
        "imports' end to first step": lambda r: r["first step"] - r["imports"],
    }
    body = []
    for label, value in metrics.items():
        plain, warm = [value(r) for r in modes["plain"]], [value(r) for r in modes["warm"]]
        bold = label == "first step"
        body.append(
            [
                label,
                median_of(plain, ".2f", bold=bold),
                median_of(warm, ".2f", bold=bold),
                signed([w - q for q, w in zip(plain, warm)], "+.2f"),
            ]
        )
    return table(["", "plain", "warm", "warm - plain, per pair"], body, "lrrl")


@figure("h200-first-sweep-cost")
def h200_first_sweep_cost() -> str:
    runs = economy_runs("h200-torch-free-controller")
    return f"{runs['new1']['setup_s[0]'] - runs['new2']['setup_s[0]']:.1f} s"


@figure("h200-rank-preload-mid1")
def h200_rank_preload_mid1() -> str:
    mid1 = economy_runs("h200-rank-preload")["mid1"]
    return f"duty cycle {mid1['duty']:.3f}, later trials' median `setup_s` {statistics.median(setups(mid1)[1:]):.2f} s"


def device_warm_pairs(first: str, second: str, key: str) -> list[float]:
    runs = economy_runs("h200-device-warm")
    return [runs[f"{first}{n}"][key] - runs[f"{second}{n}"][key] for n in (2, 3)]


@figure("h200-device-warm-thread-sweeps")
def h200_device_warm_thread_sweeps() -> str:
    runs = economy_runs("h200-device-warm")
    setup = device_warm_pairs("new", "nowarm", "setup_s[0]")
    step = device_warm_pairs("new", "nowarm", "launch to first step")
    return (
        f"the first trial's `setup_s` {' and '.join(format(v, '+.2f') + ' s' for v in setup)}, the\nfirst step "
        f"after launch {' and '.join(format(v, '+.1f') + ' s' for v in step)}: **no difference beyond the spread**. "
        f"Later trials' `setup_s`\nwere {span([v for r in runs.values() for v in setups(r)[1:]], '.2f')} s in every "
        f"sweep, `teardown_s` {span([v for r in runs.values() for v in setups(r, 'teardown_s')], '.3f')} s"
    )


@figure("h200-device-warm-no-prestart")
def h200_device_warm_no_prestart() -> str:
    setup = device_warm_pairs("nowarm", "base", "setup_s[0]")
    step = device_warm_pairs("nowarm", "base", "launch to first step")
    return (
        f"first trial's `setup_s` {' and '.join(format(v, '+.2f') + ' s' for v in setup)}, first step after launch\n  "
        f"{' and '.join(format(v, '+.1f') + ' s' for v in step)}"
    )


@figure("h200-device-warm-floor")
def h200_device_warm_floor() -> str:
    new4 = economy_runs("h200-device-warm")["new4"]
    floor = records("h200-device-warm", "call4/floor")["line 1"]["since_launch_s.first step"]
    step = new4["launch to first step"]
    return (
        f"**{floor:.1f} s** to its first step; the sweep's first trial's first step\n**{step:.1f} s** after launch "
        f"(the floor + {step - floor:.1f} s; + 3 s is issue 13's target), its `setup_s` {new4['setup_s[0]']:.1f} s, "
        f"later\ntrials {' and '.join(format(v, '.2f') for v in setups(new4)[1:])} s, `teardown_s` "
        f"{max(setups(new4, 'teardown_s')):.3f} s, **duty cycle {new4['duty']:.3f}** ({new4['duty from launch']:.3f} "
        f"from launch)"
    )


@figure("h200-device-warm-thread-alone")
def h200_device_warm_thread_alone() -> str:
    return f"{records('h200-device-warm', 'call3/memory')['after a thread (line 2)']['s']:.2f} s"


@figure("h200-rank-preload-first-trial")
def h200_rank_preload_first_trial() -> str:
    timeline = records("h200-rank-preload", "timeline")
    runs = economy_runs("h200-rank-preload")

    def before(tag: str) -> float:
        return timeline[tag]["Tune starts the first trial"] - timeline[tag]["process started: RayTrainWorker"]

    return (
        f"its worker process started {before('new1'):.1f} s before Tune's first trial\n(against {before('mid1'):.1f} s "
        f"in mid1) and still reached its first step {runs['new1']['setup_s[0]']:.1f} s after the trial's start, "
        f"against {runs['mid1']['setup_s[0]']:.1f} s"
    )


@figure("h200-rank-preload-wall")
def h200_rank_preload_wall() -> str:
    gaps = records("h200-rank-preload", "gaps")
    trials = [run for record, run in gaps.items() if record.startswith("mid1 trial")]
    rest = sum(t["epoch_rest"] + t["after_train"] + t["teardown"] + t["next_gap"] for t in trials)
    return (
        f"Its wall time of {gaps['mid1']['wall']:.1f} s is {sum(t['timed'] for t in trials):.1f} s of timed "
        f"training,\n{sum(t['setup'] for t in trials):.2f} s of set-up ({trials[0]['setup']:.2f} s of it the first "
        f"trial's), {sum(t['warmup'] for t in trials):.2f} s of warm-up steps and {rest:.2f} s of everything else"
    )


@figure("h200-torch-free-controller-timeline")
def h200_torch_free_controller_timeline() -> str:
    timeline = records("h200-torch-free-controller", "call1/timeline")
    new = [run for tag, run in timeline.items() if tag.startswith("new")]
    base = [run for tag, run in timeline.items() if tag.startswith("base")]

    def ready(runs: list[dict[str, float]]) -> list[float]:
        return [r["process started: TrainController"] for r in runs]

    def gap(runs: list[dict[str, float]]) -> list[float]:
        return [r["process started: RayTrainWorker"] - r["process started: TrainController"] for r in runs]

    def joined(values: list[float]) -> str:
        return " and ".join(format(v, ".1f") for v in values)

    return (
        f"Train's controller's actor is ready {joined(ready(new))} s after launch in NEW and starts its worker's\n"
        f"actor {joined(gap(new))} s later, against {joined(ready(base))} s and {joined(gap(base))} s in BASE"
    )


@figure("h200-torch-free-controller-floor")
def h200_torch_free_controller_floor() -> str:
    floor = records("h200-torch-free-controller", "call1/floor")["line 1"]
    return f"first step {floor['phases.first step']:.1f} s, torch's import {floor['phases.import torch']:.1f} s of it"


@figure("h200-torch-free-controller-ray-up")
def h200_torch_free_controller_ray_up() -> str:
    starts = {
        tag: t["process started: TrialGroup"]
        for tag, t in records("h200-torch-free-controller", "call1/timeline").items()
    }
    new = [v for tag, v in starts.items() if tag.startswith("new")]
    base = [v for tag, v in starts.items() if tag.startswith("base")]
    return (
        f"{min(new) - max(base):.0f} s later in both NEW sweeps (the group's first actor {span(new, '.1f')} s after "
        f"launch against {span(base, '.1f')} s)"
    )
