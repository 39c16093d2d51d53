"""Issue 39's duty cycle from the launch: the 3-trial batch_grid on one H100 (docs/results/h100-duty-from-launch)."""

from __future__ import annotations

import statistics

from . import figure, span, spoken, summary, table

TARGET = 0.80  # issue 39: the 3-trial batch_grid of 51,200-sample trials, from the launch
# the same command on three more H100 hosts, each sweep's output stamped line by line
STAMPED = (
    ("second", "summary-second-host.csv"),
    ("third", "summary-third-host.csv"),
    ("fourth", "summary-fourth-host.csv"),
)


@figure("h100-duty-from-launch")
def h100_duty_from_launch() -> str:
    body = [
        [
            str(r["sweep"]),
            f"{r['launch_to_first_trial_s']:.1f}",
            f"{r['first_setup_s']:.1f}",
            f"{r['timed_device_s']:.1f}",
            f"{r['launch_wall_s']:.1f}",
            f"{r['duty_cycle']:.3f}",
            f"**{r['duty_cycle_from_launch']:.4f}**",
        ]
        for r in summary("h100-duty-from-launch")
    ]
    header = ["sweep", "launch to first trial (s)", "first trial's setup (s)", "timed training (s)"]
    header += ["launch to last end (s)", "duty cycle from the first trial", "from the launch"]
    return table(header, body, "rrrrrrr")


@figure("h100-duty-from-launch-says")
def h100_duty_from_launch_says() -> str:
    rows = summary("h100-duty-from-launch")
    duty = [r["duty_cycle_from_launch"] for r in rows]
    median = statistics.median(duty)
    timed = statistics.median(r["timed_device_s"] for r in rows)
    wall = statistics.median(r["launch_wall_s"] for r in rows)
    allowed = timed / TARGET
    return (
        f"From the launch: **{median:.4f}** ({min(duty):.4f}-{max(duty):.4f}, {len(rows)} sweeps), against "
        f"{TARGET:.2f}. Each sweep trains for about {timed:.0f} s; {TARGET:.2f} allows {allowed:.1f} s from the "
        f"launch to the last trial's end, and the median sweep took {wall:.1f} s, {wall - allowed:.1f} s more. "
        f"Most of what is not training comes before the first trial starts "
        f"({statistics.median(r['launch_to_first_trial_s'] for r in rows):.1f} s: Ray's start, planning, the "
        f"worker group's processes) and in the first trial's setup "
        f"({statistics.median(r['first_setup_s'] for r in rows):.1f} s)."
    )


@figure("h100-duty-from-launch-phases")
def h100_duty_from_launch_phases() -> str:
    """The sweeps whose output was stamped, by host, with the launch's phases read off it."""
    body = [
        [
            host,
            str(r["sweep"]) + (" (cProfile)" if r["driver_profiled"] else ""),
            r["raysweep_commit"],
            f"{r['ray_up_s']:.1f}",
            f"{r['planned_s']:.1f}",
            f"{r['launch_to_first_trial_s']:.1f}",
            f"{r['first_group_wait_s']:.1f}",
            f"{r['launch_to_first_trial_s'] + r['first_setup_s']:.1f}",
            r["img_s"].replace(";", " / "),
            f"{r['timed_device_s']:.1f}",
            f"{r['launch_wall_s']:.1f}",
            f"**{r['duty_cycle_from_launch']:.4f}**",
        ]
        for host, name in STAMPED
        for r in summary("h100-duty-from-launch", name)
    ]
    header = ["host", "sweep", "raysweep", "Ray up (s)", "planned (s)", "first trial starts (s)"]
    header += ["it waits for its group (s)", "its first step (s)", "img/s at 64 / 128 / 256", "timed training (s)"]
    header += ["launch to last end (s)", "duty cycle from the launch"]
    return table(header, body, "llrrrrrrrrrr")


@figure("h100-duty-from-launch-phases-says")
def h100_duty_from_launch_phases_says() -> str:
    first = summary("h100-duty-from-launch")
    stamped = [r for _, name in STAMPED for r in summary("h100-duty-from-launch", name)]
    rows = summary("h100-duty-from-launch", "summary-imports.csv")
    imports = {
        m: span([r["cumulative_s"] for r in rows if r["module"] == m], ".1f") for m in {r["module"] for r in rows}
    }
    return (
        f"On the {spoken([host for host, _ in STAMPED])} hosts: "
        f"{span([r['duty_cycle_from_launch'] for r in stamped], '.4f')} from the "
        f"launch, against {TARGET:.2f}; the first trial started "
        f"{span([r['launch_to_first_trial_s'] for r in stamped], '.1f')} s after the launch, against "
        f"{span([r['launch_to_first_trial_s'] for r in first], '.1f')} s on the first host. Counted from the "
        f"launch, Ray was up at {span([r['ray_up_s'] for r in stamped], '.1f')} s and planning done at "
        f"{span([r['planned_s'] for r in stamped], '.1f')} s; the first trial then waited "
        f"{span([r['first_group_wait_s'] for r in stamped], '.1f')} s for its worker group, which had been "
        f"starting since planning began. In two fresh processes on the third host, importing torch took "
        f"{imports['torch']} s, then timm {imports['timm']} s ({imports['torch._dynamo']} s of it "
        f"torch._dynamo, which timm's torchvision import brings), DeepSpeed {imports['deepspeed']} s and "
        f"ray.train.torch {imports['ray.train.torch']} s: a worker group's rank imports all four before its "
        f"first step. Before the launch the command spent "
        f"{span([r['command_to_launch_s'] for r in stamped], '.1f')} s (Python, imports, the values' checks), "
        f"which no duty cycle counts."
    )
