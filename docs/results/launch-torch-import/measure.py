"""The launch's phases of one small sweep, two checkouts in alternation (an A/B on one machine).

    python docs/results/launch-torch-import/measure.py --base /tmp/base --new . --pairs 5 [-- CLI ARGS] > summary.csv

Each run is ``python -m raysweep.tune --space batch_grid`` with three tiny trials (``train_samples=256``, micro
batches 16/32/64) from that checkout, its output stamped line by line as it comes. Per run, counted from the
command's start: Ray up (the "Ray's logs" line), planned (the trial table printed), the first trial's start
(``started_at``) and its first step (``setup_breakdown``'s ``first_step``). Run it on an otherwise idle machine:
anything else busy there lands in both arms' spread.
"""

from __future__ import annotations

import argparse
import csv
import json
import os
import subprocess
import sys
import tempfile
import time
from pathlib import Path

import pyarrow.parquet as pq

SWEEP = ["--space", "batch_grid", "--set", "train_samples=256", "--set", "micro_batch_per_worker=[16,32,64]"]
SWEEP += ["--epochs", "1", "--repeats", "1", "--no-dashboard", "--no-report"]
MARKS = {"ray_up_s": "Ray's logs:", "planned_s": "#  num_workers"}


def run(checkout: Path, results: Path, extra: list[str]) -> dict:
    """One sweep from ``checkout`` (``extra``: more CLI arguments); its phases in seconds from the command's start."""
    command = [sys.executable, "-m", "raysweep.tune", *SWEEP, *extra, "--results-dir", str(results)]
    path = os.pathsep.join([str(checkout), *filter(None, [os.environ.get("PYTHONPATH")])])
    env = {**os.environ, "PYTHONPATH": path, "PYTHONUNBUFFERED": "1"}
    started = time.time()
    proc = subprocess.Popen(
        [*command, "--name", "s"], cwd=checkout, env=env, stdout=subprocess.PIPE, stderr=subprocess.STDOUT, text=True
    )
    seen: dict[str, float] = {}
    for line in proc.stdout:
        for key, mark in MARKS.items():
            if line.startswith(mark):
                seen.setdefault(key, time.time() - started)
    if proc.wait() != 0:
        raise SystemExit(f"the sweep from {checkout} failed (exit {proc.returncode})")
    trials = pq.read_table(results / "s" / "trials").to_pylist()
    first = min(trials, key=lambda t: t["started_at"])
    start = first["started_at"].timestamp() - started
    return {
        **{k: round(v, 2) for k, v in seen.items()},
        "first_trial_s": round(start, 2),
        "first_step_s": round(start + json.loads(first["setup_breakdown"])["first_step"], 2),
    }


def main(argv: list[str] | None = None) -> int:
    p = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    p.add_argument("--base", type=Path, required=True, help="the checkout before the change")
    p.add_argument("--new", type=Path, required=True, help="the checkout with it")
    p.add_argument("--pairs", type=int, default=5)
    p.add_argument("extra", nargs="*", help="after --: more arguments for every sweep (e.g. --model, --set)")
    args = p.parse_args(argv)
    writer = None
    for pair in range(1, args.pairs + 1):
        for arm, checkout in (("base", args.base), ("new", args.new)):
            with tempfile.TemporaryDirectory() as results:
                row = {"pair": pair, "arm": arm, **run(checkout.resolve(), Path(results), args.extra)}
            if writer is None:
                writer = csv.DictWriter(sys.stdout, fieldnames=list(row), lineterminator="\n")
                writer.writeheader()
            writer.writerow(row)
            sys.stdout.flush()
    return 0


if __name__ == "__main__":
    sys.exit(main())
