"""The 16-core validation script (docs/results/cpu16-prediction/validate.py) in its smoke form, on a real local Ray
(gloo ranks, fp32 DDP trials): it probes (links, and the coupled probe), runs 1- and 2-rank trials, predicts 2 ranks
held out from 1 and writes the summary the docs render and ``python -m analysis.predict`` reads."""

from __future__ import annotations

import os
import subprocess
import sys
from pathlib import Path

import pandas as pd

from analysis.prediction.predict import validation_line
from tests.integration.conftest import REPO, explain

ENV = {k: v for k, v in os.environ.items() if k != "RAY_ADDRESS"}  # a Ray of its own, as a user's first run


def run_script(cwd: Path, script: str, *args: str) -> subprocess.CompletedProcess:
    """``python SCRIPT ARGS`` (a path in the checkout) from ``cwd``, the checkout on its path."""
    return subprocess.run(
        [sys.executable, str(REPO / script), *args],
        cwd=cwd,
        env=ENV | {"PYTHONPATH": str(REPO), "PYTHONUNBUFFERED": "1"},
        capture_output=True,
        text=True,
        timeout=600,
    )


def test_the_validation_script_runs_small_and_writes_its_summary(tmp_path):
    proc = run_script(tmp_path, "docs/results/cpu16-prediction/validate.py", "--smoke", "out")
    assert proc.returncode == 0, explain(proc)
    summary = pd.read_csv(tmp_path / "out" / "summary.csv")
    assert set(summary["scaling"]) == {"strong", "weak"} and set(summary["num_workers"]) == {2}
    # 2 ranks predicted from 1, extrapolated and again with the coupled probe's share at 2
    assert summary["held_out"].all() and set(summary["calibrated_on"].astype(str)) == {"1", "1+probe"}
    assert set(summary.loc[summary["calibrated_on"] == "1+probe", "contention_source"]) == {"probe"}
    assert summary["measured_step_time_ms"].gt(0).all() and summary["error"].notna().all()
    assert "worst held-out error" in proc.stdout.splitlines()[-1]
    assert validation_line(tmp_path / "out" / "summary.csv").startswith(
        f"validated against measurement: out ({os.cpu_count()} CPU cores, gloo), worst held-out error "
    )
    # what it measured is saved beside the summary, and predicting again from it gives the same rows
    again = run_script(tmp_path, "docs/results/cpu16-prediction/validate.py", "--smoke", "--from", "out", "again")
    assert again.returncode == 0, explain(again)
    pd.testing.assert_frame_equal(pd.read_csv(tmp_path / "again" / "summary.csv"), summary)


def test_the_host_sharing_script_runs_small_and_writes_its_table(tmp_path):
    proc = run_script(tmp_path, "docs/results/cpu16-prediction/host_sharing.py", "--smoke", "out")
    assert proc.returncode == 0, explain(proc)
    table = pd.read_csv(tmp_path / "out" / "host_sharing.csv")
    assert list(table["at_once"]) == [2, 2] and table["step_time_ms"].gt(0).all()
    both = table[table["at_once"] == 2]  # two at once on 2 CPUs at half a CPU each: their runs overlap
    assert max(both["started_at"]) < min(both["finished_at"]), table
