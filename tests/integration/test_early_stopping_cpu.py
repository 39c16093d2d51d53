"""Tune's own search on a real local Ray: ASHA stops poor trials early (rows with status stopped, the epochs
they reached) while the shared worker group goes on to the next trial; Optuna proposes the learning rates."""

from __future__ import annotations

import json
import os
import subprocess
import sys
import textwrap

from raysweep.core.store import read_table
from tests.integration.conftest import REPO, explain, run_cli

BATCHES = "micro_batch_per_worker=[16,32,128,256]"


def test_asha_from_the_cli_stops_trials_early_with_stopped_rows(tmp_path):
    proc = run_cli(
        "--space", "batch_grid", "--epochs", "3", "--set", BATCHES, "--scheduler", "asha", "--repeats", "1",
        "--results-dir", str(tmp_path), "--name", "asha", "--no-dashboard", "--no-report",
    )  # fmt: skip
    assert proc.returncode == 0, explain(proc)
    trials = read_table(tmp_path / "asha" / "trials", "trials").to_pylist()
    epochs = read_table(tmp_path / "asha" / "epochs", "epochs").to_pylist()
    statuses = {t["trial_id"]: t["status"] for t in trials}
    reached = {tid: max(e["epoch"] for e in epochs if e["trial_id"] == tid) + 1 for tid in statuses}
    assert len(statuses) == 4 and set(statuses.values()) <= {"completed", "stopped"}, statuses
    assert "stopped" in statuses.values(), explain(proc)
    for tid, status in statuses.items():  # ASHA's rungs with grace period 1, factor 2 and 3 epochs: 1, 2
        assert reached[tid] == 3 if status == "completed" else reached[tid] in (1, 2), (statuses, reached)
    assert "stopped early by the scheduler" in proc.stdout


SCRIPT = textwrap.dedent(
    """
    import json, sys
    import raysweep

    result = raysweep.run_sweep(
        "batch_grid",
        overrides={"micro_batch_per_worker": [32, 128], "epochs": 2, "lr": {"loguniform": [1e-4, 1e-2]}},
        results_dir=sys.argv[1], name="optuna", dashboard=False, report=False,
        search="optuna", num_samples=2, scheduler="median", repeats=1,
    )
    print("RESULT " + json.dumps(result.trials.select(["status", "micro_batch_per_worker", "lr"]).to_pylist()))
    """
)


def test_optuna_from_the_api_searches_each_grid_point_with_its_budget(tmp_path):
    env = {**os.environ, "PYTHONUNBUFFERED": "1"}
    env.pop("RAY_ADDRESS", None)
    proc = subprocess.run(
        [sys.executable, "-c", SCRIPT, str(tmp_path)], cwd=REPO, env=env, capture_output=True, text=True, timeout=600
    )
    assert proc.returncode == 0, explain(proc)
    (line,) = [line for line in proc.stdout.splitlines() if line.startswith("RESULT ")]
    trials = json.loads(line.removeprefix("RESULT "))
    assert sorted(t["micro_batch_per_worker"] for t in trials) == [32, 32, 128, 128], trials
    assert all(t["status"] in ("completed", "stopped") for t in trials), trials
    assert all(1e-4 <= t["lr"] <= 1e-2 for t in trials), trials
    assert len({t["lr"] for t in trials}) == 4, trials  # Optuna's proposals, not the template's draw
