"""The first worker group started as soon as Ray is up, on H200 hosts (docs/results/h200-early-group)."""

from __future__ import annotations

import statistics

from . import figure, listed, records, span, table
from .common import economy_runs, setups

EARLY_GROUP_HOSTS = {"call1": "C", "call2": "D", "call3": "E", "call4": "F"}

EARLY_GROUP_NOTES = {"new1": " (no import thread)", "new5": " (no run of the code before)"}


def early_group_pairs() -> list[tuple[dict, dict]]:
    """Each NEW run with the BASE run of its host (call)."""
    runs = economy_runs("h200-early-group")
    base = {r["call"]: r for tag, r in runs.items() if tag.startswith("base")}
    return [(base[r["call"]], r) for tag, r in runs.items() if tag.startswith("new") and r["call"] in base]


@figure("h200-early-group")
def h200_early_group() -> str:
    body = []
    runs = economy_runs("h200-early-group")
    for tag, r in sorted(runs.items(), key=lambda item: (item[1]["call"], not item[0].startswith("base"), item[0])):
        bold = "**{}**" if tag.startswith("new") and r["call"] != "call4" else "{}"
        first, *later = setups(r)
        body.append(
            [
                f"{EARLY_GROUP_HOSTS[r['call']]} ({r['call'][-1]})",
                tag + EARLY_GROUP_NOTES.get(tag, ""),
                bold.format(f"{first:.2f}"),
                listed(later, ".2f"),
                f"{r['launch to first trial']:.1f}",
                bold.format(f"{r['launch to first step']:.1f}"),
                bold.format(f"{r['launch to end']:.1f}"),
                bold.format(f"{r['duty']:.3f}"),
                f"{r['duty from launch']:.3f}",
            ]
        )
    header = ["host (call)", "run", "first trial `setup_s`", "later `setup_s`", "launch to first trial"]
    header += ["launch to first step", "launch to last end", "duty cycle", "duty cycle from launch"]
    return table(header, body, "llrrrrrrr")


def early_group_gains(key: str, fmt: str, higher_is_better: bool = False) -> str:
    sign = 1 if higher_is_better else -1
    return span([sign * (new[key] - base[key]) for base, new in early_group_pairs()], fmt)


@figure("h200-early-group-gains")
def h200_early_group_gains() -> str:
    runs = economy_runs("h200-early-group")
    pairs = early_group_pairs()
    first_setup = span([base["setup_s[0]"] - new["setup_s[0]"] for base, new in pairs], ".1f")
    timed = [r["timed_s[0]"] for r in runs.values()]
    by_call: dict[str, list[float]] = {}
    for r in runs.values():
        by_call.setdefault(r["call"], []).append(r["timed_s[0]"])
    spread = max(max(v) - min(v) for v in by_call.values())
    whole = [r for tag, r in runs.items() if tag in ("new2", "new3", "new4")]  # the whole change, beside a BASE run
    base = [r for tag, r in runs.items() if tag.startswith("base")]

    def against(key: str, fmt: str, unit: str = "") -> str:
        new_values, base_values = [r[key] for r in whole], [r[key] for r in base]
        return (
            f"{statistics.median(new_values):{fmt}}{unit} ({span(new_values, fmt)}) against "
            f"{statistics.median(base_values):{fmt}}{unit} ({span(base_values, fmt)})"
        )

    later = [v for r in runs.values() for v in setups(r)[1:]]
    teardown = max(v for r in runs.values() for v in setups(r, "teardown_s"))
    duty_new = [r["duty"] for r in whole]
    duty_base = [r["duty"] for r in base]
    return (
        f"the first trial's `setup_s` by {first_setup} s,\nits first step from launch by "
        f"{early_group_gains('launch to first step', '.1f')} s, the sweep from launch to end by "
        f"{early_group_gains('launch to end', '.1f')} s (part of it the first\ntrial's timed training, "
        f"{span(timed, '.1f')} s, which varies by up to {spread:.0f} s between runs of one host), the duty cycle\n"
        f"by {early_group_gains('duty', '.2f', higher_is_better=True)}. Medians of the whole change (new2, new3, new4) "
        f"against the three BASE runs: duty cycle\n**{statistics.median(duty_new):.3f}** ({span(duty_new, '.3f')}) "
        f"against {statistics.median(duty_base):.3f} ({span(duty_base, '.3f')}); from launch "
        f"{against('duty from launch', '.3f')}; first trial {against('setup_s[0]', '.2f', ' s')}. "
        f"Later trials' `setup_s`\n({span(later, '.2f')} s) and `teardown_s` (<= {teardown:.3f} s)"
    )


@figure("h200-first-step-sooner")
def h200_first_step_sooner() -> str:
    return early_group_gains("launch to first step", ".0f")


@figure("h200-early-group-new5")
def h200_early_group_new5() -> str:
    events = records("h200-early-group", "call4/timeline")["new5"]
    ray_up = events["Ray's first idle worker process (16 in all): Ray is up"]
    controller, worker = events["process started: TrainController"], events["process started: RayTrainWorker"]
    step = events["its first step"]
    floor = records("h200-early-group", "call4/floor")["line 1"]["since_launch_s.first step"]
    return (
        f"Ray up (its first\nidle worker process) at {ray_up:.1f}; Train's controller process at {controller:.1f}; the "
        f"worker's process at {worker:.1f} (the\ncontroller's start, imports and placement group: "
        f"{worker - controller:.1f} s); Tune starts the first trial at {events['Tune starts the first trial']:.1f}; "
        f"the first\nstep at {step:.1f}, "
        f"{step - worker:.1f} s after the worker's process started (its imports of torch, timm and DeepSpeed, the\n"
        f"process group, then model, engine and step). The same host's cold-process floor (`call4/floor.log`, the\n"
        f"host's first process): {floor:.1f} s, so the first step came at the floor + {step - floor:.1f} s from launch"
    )


@figure("h200-overlap")
def h200_overlap() -> str:
    modes: dict[str, dict[str, list[float]]] = {"plain": {}, "thread": {}}
    for record, run in records("h200-early-group", "call2/overlap").items():
        for quantity, value in run.items():
            modes[record.split()[0]].setdefault(quantity, []).append(value)

    def listed_and(values: list[float]) -> str:
        return " and ".join(format(v, ".1f") for v in values)

    return (
        f"`ray.train.torch` ready {listed_and(modes['plain']['ready'])} s after `import ray` when imported after "
        f"`ray.init`,\n{listed_and(modes['thread']['ready'])} s when imported on a thread beside it (`ray.init` itself "
        f"{span(modes['plain']['ray.init'], '.1f')} s alone, {span(modes['thread']['ray.init'], '.1f')} s with "
        f"the\nthread)"
    )


@figure("h200-early-group-host-c-floor")
def h200_early_group_host_c_floor() -> str:
    floor = records("h200-early-group", "call1/floor")["line 1"]["since_launch_s.first step"]
    new1 = economy_runs("h200-early-group")["new1"]
    return (
        f"({floor:.2f} s,\nthe host's first process, disk cache cold): by `setup_s`, {new1['setup_s[0]']:.2f} s, it is "
        f"within it, but only because its\nworkers now start before Tune starts it; from launch its first step comes "
        f"at {new1['launch to first step']:.1f} s, the floor + {new1['launch to first step'] - floor:.1f} s"
    )


@figure("h200-early-group-launch-saving")
def h200_early_group_launch_saving() -> str:
    runs = economy_runs("h200-early-group")
    saved = [
        base["launch to first step"] - new["launch to first step"]
        for base_tag, base in runs.items()
        if base_tag.startswith("base")
        for new_tag, new in runs.items()
        if new_tag.startswith("new") and new["call"] == base["call"]
    ]
    return f"{span(saved, '.0f')} s"
