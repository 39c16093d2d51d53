"""The sweeps' economies as this experiment's summary table: one row per sweep, in the order they ran.

    cd docs/results/h100-duty-from-launch && python summarize.py RUN/1 RUN/2 ... > summary.csv

Each RUN/i holds a sweep's ``sweep.json`` and its ``summary.csv`` (``docs/results/summarize_sweep.py``: the trials
table). Per sweep: both duty cycles and the wall times they divide by (``sweep.json``'s ``economy``), the timed
device-seconds, the first trial's ``setup_s`` and its start after the launch, and each trial's throughput.
Where RUN/i also holds the sweep's output with each line stamped (``*.log``: ``<unix time> <line>``, its first
line ``<unix time> [launch]`` when the command started), the launch's phases too, each counted from the launch
(``run_planned``'s call): the command's start before it, Ray up (the "Ray's logs" line), planned (the trial
table printed), and the first trial's wait for its worker group (``setup_breakdown``'s ``worker_started``).
"""

from __future__ import annotations

import csv
import json
import sys
from datetime import datetime
from pathlib import Path


def row(run: Path) -> dict:
    sweep = json.loads((run / "sweep.json").read_text())
    economy = sweep["economy"]
    with open(run / "summary.csv", newline="") as f:
        trials = sorted(csv.DictReader(f), key=lambda t: t["started_at"])
    launch_wall, wall = economy["launch_wall_s"], economy["wall_s"]
    launched_at = datetime.fromisoformat(trials[0]["started_at"]).timestamp() - (launch_wall - wall)
    return {
        "sweep": run.name,
        "trials": len(trials),
        "duty_cycle": round(economy["duty_cycle"], 4),
        "duty_cycle_from_launch": round(economy["duty_cycle_from_launch"], 4),
        "launch_wall_s": round(launch_wall, 2),
        "wall_s": round(wall, 2),
        "timed_device_s": round(economy["duty_cycle_from_launch"] * launch_wall * economy["devices"], 2),
        "launch_to_first_trial_s": round(launch_wall - wall, 2),
        "first_setup_s": round(float(trials[0]["setup_s"]), 2),
        "micro_batches": ";".join(t["micro_batch_per_worker"] for t in trials),
        "img_s": ";".join(f"{float(t['throughput']):.0f}" for t in trials),
        "compiled": ";".join(t["compiled"] for t in trials),
        "device": json.loads(trials[0]["device_names"])[0],
        "raysweep_commit": short_commit(sweep["versions"]["raysweep_commit"]),
        "driver_profiled": (run / "driver.prof").is_file(),  # the sweep's process ran under cProfile
        **phases(run, launched_at),
        "first_group_wait_s": json.loads(trials[0]["setup_breakdown"])["worker_started"],
    }


def short_commit(commit: str) -> str:
    """``1c6ba46``, or ``1c6ba46+dirty`` where the checkout had changes (``sweep.json`` keeps the whole hash)."""
    return commit[:7] + ("+dirty" if commit.endswith("+dirty") else "")


def phases(run: Path, launched_at: float) -> dict:
    """The launch's phases from the stamped output, in seconds from the launch (empty without it)."""
    logs = sorted(run.glob("*.log"))
    if not logs:
        return {"command_to_launch_s": None, "ray_up_s": None, "planned_s": None}
    stamped = [line.split(" ", 1) for line in logs[0].read_text().splitlines() if " " in line]
    first = {}
    for stamp, text in stamped:
        for key, start in (("command", "[launch]"), ("ray_up", "Ray's logs:"), ("planned", "#  num_workers")):
            if text.startswith(start):
                first.setdefault(key, float(stamp))
    return {
        "command_to_launch_s": round(launched_at - first["command"], 2),
        "ray_up_s": round(first["ray_up"] - launched_at, 2),
        "planned_s": round(first["planned"] - launched_at, 2),
    }


def main(argv: list[str] | None = None) -> int:
    runs = [Path(a) for a in (sys.argv[1:] if argv is None else argv)]
    table = [row(run) for run in runs]
    writer = csv.DictWriter(sys.stdout, fieldnames=list(table[0]), lineterminator="\n")
    writer.writeheader()
    writer.writerows(table)
    return 0


if __name__ == "__main__":
    sys.exit(main())
