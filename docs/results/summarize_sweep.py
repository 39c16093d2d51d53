"""Writes an experiment's summary.csv from the sweeps it committed: one row per trial, every trials column.

    PYTHONPATH=. python docs/results/summarize_sweep.py docs/results/<experiment> [...]

An experiment of several sweeps (each a directory below it with its own ``trials/``) gets one table, its
first column ``sweep_dir`` naming the trial's sweep directory relative to the experiment ("." for its own).

The docs' figures are rendered from summary.csv (``python docs/render.py``), so the sweep's raw tables
(trials/, epochs/, ranks/), its logs and event files need not stay in the tree once it is written. List
columns are written as JSON; timestamps as ISO 8601.
"""

from __future__ import annotations

import argparse
import csv
import json
from datetime import datetime
from pathlib import Path


def cell(value: object) -> object:
    if isinstance(value, list):
        return json.dumps(value)
    if isinstance(value, datetime):
        return value.isoformat()
    return value


def sweeps(experiment: Path) -> list[Path]:
    """The directories under ``experiment`` (itself included) that hold a trials table."""
    return sorted({file.parent.parent for file in experiment.rglob("trials/*.parquet")})


def summarize(experiment: Path) -> Path:
    import pyarrow.parquet as pq

    found = sweeps(experiment)
    trials = []
    for sweep in found:
        named = {"sweep_dir": sweep.relative_to(experiment).as_posix()} if len(found) > 1 else {}
        # as the files hold them: a sweep older than today's schema has only the columns it wrote
        for file in sorted((sweep / "trials").glob("*.parquet")):
            trials += [{**named, **row} for row in pq.read_table(file).to_pylist()]
    columns = list(dict.fromkeys(key for row in trials for key in row))
    trials.sort(
        key=lambda row: (row.get("sweep_dir", ""), row["started_at"] is None, row["started_at"], row["trial_id"])
    )
    out = experiment / "summary.csv"
    with open(out, "w", newline="") as f:
        writer = csv.DictWriter(f, fieldnames=columns)
        writer.writeheader()
        writer.writerows({k: cell(v) for k, v in row.items()} for row in trials)
    return out


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("experiments", nargs="+", type=Path)
    for experiment in parser.parse_args(argv).experiments:
        print(summarize(experiment))
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
