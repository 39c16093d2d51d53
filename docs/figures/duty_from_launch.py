"""Issue 39's duty cycle from the launch: the 3-trial batch_grid on one H100 (docs/results/h100-duty-from-launch)."""

from __future__ import annotations

import statistics

from . import figure, summary, table

TARGET = 0.80  # issue 39: the 3-trial batch_grid of 51,200-sample trials, from the launch


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
