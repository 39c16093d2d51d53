"""One sweep per directory: while a sweep runs, a second sweep of its name and a --resume of it are refused in
one line naming the running one's process, and the first sweep's rows are the only ones."""

from __future__ import annotations

import os
import signal
from pathlib import Path

from tests.integration.conftest import Run, explain, run_cli, table

SMALL = ["--repeats", "1", "--set", "micro_batch_per_worker=[8,16]", "--no-dashboard"]


def test_a_second_sweep_and_a_resume_of_a_running_sweep_are_refused_and_nothing_is_mixed(tmp_path: Path):
    # long enough to be running still when the others start, whatever the machine's load: it is stopped below
    first = Run(
        tmp_path, "--space", "batch_grid", "--name", "same", "--epochs", "50", *SMALL, "--no-report", cwd=tmp_path
    )
    first.wait_for(r"trial \w+ \(w1 mb8 acc1\) started")

    second = run_cli("--space", "batch_grid", "--name", "same", "--epochs", "1", *SMALL, cwd=tmp_path, timeout=120)
    assert second.returncode == 2, explain(second)
    assert second.stderr.count("\n") == 1, explain(second)
    assert f"in use by a running sweep (process {first.proc.pid} on host " in second.stderr, explain(second)

    resumed = run_cli("--resume", "raysweep-results/same", "--no-dashboard", cwd=tmp_path, timeout=120)
    assert resumed.returncode == 2, explain(resumed)
    assert f"(process {first.proc.pid} on host " in resumed.stderr, explain(resumed)

    os.killpg(first.proc.pid, signal.SIGINT)
    assert first.wait() == 130, first.output()
    rows = table(tmp_path / "raysweep-results" / "same", "trials").to_pylist()
    assert all(r["trial_id"] in first.output() for r in rows), rows

    again = run_cli("--space", "batch_grid", "--name", "same", "--epochs", "1", *SMALL, cwd=tmp_path, timeout=120)
    assert again.returncode == 2 and "sweep same already" in again.stderr, explain(again)
    assert "--resume raysweep-results/same" in again.stderr, explain(again)
