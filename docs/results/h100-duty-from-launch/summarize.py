"""The sweeps' economies as this experiment's summary table: one row per sweep, in the order they ran.

    cd docs/results/h100-duty-from-launch && python summarize.py RUN/1 RUN/2 ... > summary.csv

Each RUN/i holds a sweep's ``sweep.json`` and its ``summary.csv`` (``docs/results/summarize_sweep.py``: the trials
table). Per sweep: both duty cycles and the wall times they divide by (``sweep.json``'s ``economy``), the timed
device-seconds, the first trial's ``setup_s`` and its start after the launch, and each trial's throughput.
"""

from __future__ import annotations

import csv
import json
import sys
from pathlib import Path


def row(run: Path) -> dict:
    sweep = json.loads((run / "sweep.json").read_text())
    economy = sweep["economy"]
    with open(run / "summary.csv", newline="") as f:
        trials = sorted(csv.DictReader(f), key=lambda t: t["started_at"])
    launch_wall, wall = economy["launch_wall_s"], economy["wall_s"]
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
