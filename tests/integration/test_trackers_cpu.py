"""The end of a sweep of 2-rank CPU trials, logged to MLflow: its runs read back with MLflow's own client (named
as the TensorBoard runs, the trials' parameters as params, their measurements as metrics), and the terminal ends
with the summary, nothing of the profiled windows' per-rank lines anywhere in it."""

from __future__ import annotations

import os
import subprocess
import sys
from pathlib import Path

import pytest

from raysweep.runtime.ray_logs import CHATTER
from tests.integration.conftest import REPO, table

EPOCHS = 2


@pytest.fixture(scope="module")
def sweep(tmp_path_factory) -> tuple[Path, list[str]]:
    """The sweep's directory and its terminal, stdout and stderr in the order a user sees them."""
    pytest.importorskip("mlflow")
    results = tmp_path_factory.mktemp("tracked")
    env = {**os.environ, "PYTHONUNBUFFERED": "1"}
    for name in ("RAY_ADDRESS", "MLFLOW_TRACKING_URI"):  # a local Ray; MLflow's default store, in the sweep
        env.pop(name, None)
    argv = [
        sys.executable, "-m", "raysweep.tune", "--space", "batch_grid", "--results-dir", str(results),
        "--name", "tracked", "--epochs", str(EPOCHS), "--set", "num_workers=2", "--repeats", "1",
        "--set", "micro_batch_per_worker=[16,32]", "--no-dashboard", "--no-report", "--log-to", "mlflow",
    ]  # fmt: skip
    proc = subprocess.run(
        argv, cwd=REPO, env=env, stdout=subprocess.PIPE, stderr=subprocess.STDOUT, text=True, timeout=900
    )
    assert proc.returncode == 0, proc.stdout[-8000:]
    return results / "tracked", proc.stdout.splitlines()


def test_the_sweeps_mlflow_runs_read_back_with_params_and_metrics(sweep):
    from mlflow import MlflowClient

    root, _ = sweep
    trials = {r["trial_id"]: r for r in table(root, "trials").to_pylist()}
    client = MlflowClient(f"sqlite:///{root / 'mlflow.db'}")
    runs = client.search_runs([client.get_experiment_by_name("tracked").experiment_id])
    assert sorted(r.info.run_name for r in runs) == sorted(p.name for p in (root / "tensorboard").iterdir())
    assert len(runs) == len(trials) == 2
    for run in runs:
        trial = trials[run.data.tags["trial_id"]]
        assert run.info.status == "FINISHED"
        for name in ("num_workers", "micro_batch_per_worker", "model", "dataset", "epochs"):
            assert run.data.params[name] == str(trial[name]), name
        assert not set(run.data.params) & set(run.data.metrics)
        assert run.data.metrics["throughput"] == pytest.approx(trial["throughput"], rel=1e-9)
        history = client.get_metric_history(run.info.run_id, "train/loss")
        assert sorted(m.step for m in history) == list(range(EPOCHS))


def test_the_summary_is_the_last_thing_printed_and_no_profiler_line_reaches_the_terminal(sweep):
    root, lines = sweep
    # the trials ran their profiled windows (their collective figures come from them)
    assert all(v is not None for v in table(root, "trials").column("comm_kernel_ms").to_pylist())
    leaked = [line for line in lines if any(marker in line for marker in CHATTER)]
    assert leaked == [], leaked
    tail = [line for line in lines if line.strip()][-2:]
    assert tail[0].startswith("2 trials in ") and f"results: {root}" in tail[0], lines[-20:]
    assert tail[1].startswith("  query: python -m raysweep.query"), lines[-20:]
