"""Issue 39's duty cycle from the launch: the 3-trial batch_grid on one H100 (docs/results/h100-duty-from-launch)."""

from __future__ import annotations

import statistics

from . import figure, span, summary, table

TARGET = 0.80  # issue 39: the 3-trial batch_grid of 51,200-sample trials, from the launch
SECOND_HOST = "summary-second-host.csv"  # the same command on another H100 host, its output stamped


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


@figure("h100-duty-from-launch-second-host")
def h100_duty_from_launch_second_host() -> str:
    """The second host's sweeps, with the launch's phases from their stamped output."""
    body = [
        [
            str(r["sweep"]),
            f"{r['ray_up_s']:.1f}",
            f"{r['planned_s']:.1f}",
            f"{r['launch_to_first_trial_s']:.1f}",
            f"{r['first_group_wait_s']:.1f}",
            f"{r['first_setup_s']:.1f}",
            r["img_s"].replace(";", " / "),
            f"{r['timed_device_s']:.1f}",
            f"{r['launch_wall_s']:.1f}",
            f"**{r['duty_cycle_from_launch']:.4f}**",
        ]
        for r in summary("h100-duty-from-launch", SECOND_HOST)
    ]
    header = ["sweep", "Ray up (s)", "planned (s)", "first trial starts (s)", "it waits for its group (s)"]
    header += ["its setup (s)", "img/s at 64 / 128 / 256", "timed training (s)", "launch to last end (s)"]
    header += ["duty cycle from the launch"]
    return table(header, body, "rrrrrrrrrr")


@figure("h100-duty-from-launch-second-host-says")
def h100_duty_from_launch_second_host_says() -> str:
    first, second = summary("h100-duty-from-launch"), summary("h100-duty-from-launch", SECOND_HOST)
    duty = [r["duty_cycle_from_launch"] for r in second]
    before = [r["launch_to_first_trial_s"] for r in first]
    after = [r["launch_to_first_trial_s"] for r in second]
    first_step = [r["launch_to_first_trial_s"] + r["first_setup_s"] for r in second]
    return (
        f"On the second host: {span(duty, '.4f')} from the launch ({len(second)} sweeps), against {TARGET:.2f}. "
        f"Its first trial started {span(after, '.1f')} s after the launch, against {span(before, '.1f')} s on the "
        f"first host, and took its first step {span(first_step, '.1f')} s after it. Counted from the launch, Ray "
        f"was up at {span([r['ray_up_s'] for r in second], '.1f')} s and planning done at "
        f"{span([r['planned_s'] for r in second], '.1f')} s; the first trial then waited "
        f"{span([r['first_group_wait_s'] for r in second], '.1f')} s for its worker group, which had been "
        f"starting since planning began. Before the launch the command spent "
        f"{span([r['command_to_launch_s'] for r in second], '.1f')} s (Python, imports, the values' checks), "
        f"which no duty cycle counts."
    )
