"""Tune's own search on a real local Ray: ASHA stops poor trials early (rows with status stopped, the epochs
they reached) while the shared worker group goes on to the next trial; Optuna proposes the learning rates."""

from __future__ import annotations

import os
import pickle
import signal
import subprocess
import sys
import textwrap
import time
from collections import Counter

from raysweep.core.store import read_table
from tests.integration.conftest import REPO, Run, explain, on_shared, printed_result, run_cli, table, user_env

# Three trials, one at a time: batch 16 sets each rung's bar, and 256, with a sixteenth of its optimizer steps,
# falls below it, so at least one trial is stopped.
BATCHES = "micro_batch_per_worker=[16,32,256]"


def test_asha_from_the_cli_stops_trials_early_with_stopped_rows(tmp_path, shared_ray):
    proc = run_cli(
        "--space", "batch_grid", "--epochs", "3", "--set", BATCHES, "--scheduler", "asha", "--repeats", "1",
        "--results-dir", str(tmp_path), "--name", "asha", "--no-dashboard", "--no-report", *on_shared(shared_ray),
    )  # fmt: skip
    assert proc.returncode == 0, explain(proc)
    trials = read_table(tmp_path / "asha" / "trials", "trials").to_pylist()
    epochs = read_table(tmp_path / "asha" / "epochs", "epochs").to_pylist()
    statuses = {t["trial_id"]: t["status"] for t in trials}
    reached = {tid: max(e["epoch"] for e in epochs if e["trial_id"] == tid) + 1 for tid in statuses}
    assert len(statuses) == 3 and set(statuses.values()) <= {"completed", "stopped"}, statuses
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
        overrides={
            "micro_batch_per_worker": [32, 128], "epochs": 2, "train_samples": 64, "lr": {"loguniform": [1e-4, 1e-2]}
        },
        results_dir=sys.argv[1], name="optuna", dashboard=False, report=False,
        search="optuna", num_samples=2, scheduler="median", repeats=1,
    )
    print("RESULT " + json.dumps(result.trials.select(["status", "micro_batch_per_worker", "lr"]).to_pylist()))
    """
)


def test_optuna_from_the_api_searches_each_grid_point_with_its_budget(tmp_path):
    proc = subprocess.run(
        [sys.executable, "-c", SCRIPT, str(tmp_path)],
        cwd=REPO,
        env=user_env(),
        capture_output=True,
        text=True,
        timeout=600,
    )
    assert proc.returncode == 0, explain(proc)
    trials = printed_result(proc)
    assert sorted(t["micro_batch_per_worker"] for t in trials) == [32, 32, 128, 128], trials
    assert all(t["status"] in ("completed", "stopped") for t in trials), trials
    assert all(1e-4 <= t["lr"] <= 1e-2 for t in trials), trials
    assert len({t["lr"] for t in trials}) == 4, trials  # Optuna's proposals, not the template's draw


def test_an_adaptive_sweep_killed_with_sigkill_resumes_without_rerunning_a_finished_or_stopped_trial(tmp_path):
    """tuned_batch (Optuna under ASHA, 2 batch sizes x 3 trials) killed with SIGKILL once 2 trials have rows;
    --resume ends with one row per trial and each study's budget, keeps every row written before the kill, and
    continues Tune's searcher (each batch size's study keeps its budget of 3) and the ASHA schedulers (their
    rungs still hold the trials from before the kill)."""
    name, sweep = "killed", tmp_path / "killed"
    # two of the fixed-epochs arm's grids, so two studies; 3 epochs keep ASHA's rung at epoch 2 below the last
    # epoch, and 64 samples an epoch keep each trial to its worker's start and a few steps
    grids = ["--set", "max_steps_per_epoch=[0]", "--set", "micro_batch_per_worker=[16,32]", "--set", "train_samples=64"]
    args = ["--space", "tuned_batch", *grids, "--repeats", "1", "--num-samples", "3", "--epochs", "3"]
    run = Run(tmp_path, *args, "--results-dir", str(tmp_path), "--name", name, "--no-report", "--no-dashboard")
    deadline = time.time() + 600
    while len(list((sweep / "trials").glob("*.parquet"))) < 2:
        assert run.proc.poll() is None, run.output()
        assert time.time() < deadline, run.output()
        time.sleep(0.2)
    os.kill(run.proc.pid, signal.SIGKILL)
    run.proc.wait()
    before = {r["trial_id"]: (r["status"], r["finished_at"]) for r in table(sweep, "trials").to_pylist()}
    assert len(before) >= 2 and len(before) < 6, before

    resumed = run_cli("--resume", str(sweep), "--no-report", "--no-dashboard")
    assert resumed.returncode == 0, explain(resumed)
    rows = table(sweep, "trials").to_pylist()
    assert len(rows) == len({r["trial_id"] for r in rows}) == 6, explain(resumed)
    assert Counter(r["micro_batch_per_worker"] for r in rows) == {16: 3, 32: 3}, rows
    assert {r["status"] for r in rows} <= {"completed", "stopped"}, rows
    after = {r["trial_id"]: (r["status"], r["finished_at"]) for r in rows}
    assert all(after[tid] == row for tid, row in before.items()), (before, after)  # none ran again

    with open(sweep / "schedulers.pkl", "rb") as f:
        studies = pickle.load(f)  # one ASHA per batch size's study, as the resumed run left them
    recorded = {tid for asha in studies.values() for bracket in asha._brackets for _, rung in bracket._rungs
                for tid in rung}  # fmt: skip
    assert set(before) <= recorded, (sorted(before), sorted(recorded))
    assert len(studies) == 2, studies
