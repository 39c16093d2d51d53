"""The README's CPU example sweeps regenerated in their smoke form (docs/results/cpu_examples.py --smoke: one
tiny trial of the embedded default, on a real local Ray), keeping its summary, sweep.json and report."""

from __future__ import annotations

import csv
import os
import subprocess
import sys

from tests.integration.conftest import REPO, explain

ENV = {k: v for k, v in os.environ.items() if k != "RAY_ADDRESS"} | {"PYTHONPATH": str(REPO)}


def test_the_example_sweep_runs_tiny_and_keeps_its_summary_sweep_and_report(tmp_path):
    proc = subprocess.run(
        [sys.executable, str(REPO / "docs/results/cpu_examples.py"), "--smoke", "out", "cpu-batch-grid"],
        cwd=tmp_path, env=ENV, capture_output=True, text=True, timeout=600,
    )  # fmt: skip
    assert proc.returncode == 0, explain(proc)
    kept = tmp_path / "out" / "cpu-batch-grid"
    assert (kept / "sweep.json").is_file() and (kept / "report" / "report.md").is_file()
    with open(kept / "summary.csv", newline="") as f:
        (trial,) = list(csv.DictReader(f))
    assert trial["status"] == "completed" and trial["micro_batch_per_worker"] == "16"
