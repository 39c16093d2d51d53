"""Writes summary.csv, one row per sweep of this experiment, from the calls' table.txt (each sweep's own
sweep.json economy and trials rows, as run.sh printed them).

    PYTHONPATH=. python docs/results/h100-bytecode-cache/summarize.py

The calls' outputs have left the tree; git history keeps them, so a rerun reads a restored copy:
``git archive d39067f docs/results/h100-bytecode-cache | tar -x -C /tmp/x``, then this script from there.
"""

from __future__ import annotations

import csv
import json
import re
from pathlib import Path

HERE = Path(__file__).resolve().parent
HOSTS = {"call1": "A", "call2": "A", "call3": "B", "call5": "C"}  # call4 ran the bench alone
LINE = re.compile(
    r"(?P<sweep>\w+) setup_s (?P<setup>\[.*?\]) teardown_s (?P<teardown>\[.*?\]) timed_s \[.*?\] "
    r"wall_s (?P<wall>[\d.]+) "
    r"duty (?P<duty>[\d.]+) \| launch to first trial [\d.]+ launch to first step (?P<first_step>[\d.]+) "
    r"launch to end [\d.]+ duty from launch (?P<duty_launch>[\d.]+)"
)
COLUMNS = [
    "call", "host", "sweep", "cache", "first_setup_s", "later_setup_s", "max_teardown_s", "wall_s",
    "duty_cycle", "first_step_from_launch_s", "duty_cycle_from_launch",
]  # fmt: skip


def rows() -> list[dict]:
    out = []
    for call, host in HOSTS.items():
        for match in LINE.finditer((HERE / call / "table.txt").read_text()):
            setup = json.loads(match["setup"])
            out.append(
                {
                    "call": call,
                    "host": host,
                    "sweep": match["sweep"],
                    "cache": match["sweep"].startswith("new"),  # new: with the cache; base: 673c4d0, before it
                    "first_setup_s": setup[0],
                    "later_setup_s": json.dumps(setup[1:]),
                    "max_teardown_s": max(json.loads(match["teardown"])),
                    "wall_s": float(match["wall"]),
                    "duty_cycle": float(match["duty"]),
                    "first_step_from_launch_s": float(match["first_step"]),
                    "duty_cycle_from_launch": float(match["duty_launch"]),
                }
            )
    return out


def main() -> None:
    with open(HERE / "summary.csv", "w", newline="") as f:
        writer = csv.DictWriter(f, fieldnames=COLUMNS)
        writer.writeheader()
        writer.writerows(rows())


if __name__ == "__main__":
    main()
