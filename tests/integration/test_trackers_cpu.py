"""``--log-to mlflow`` with today's MLflow: a real sweep's runs read back with MLflow's own client, named as the
TensorBoard runs, the trials' parameters as params and their measurements as metrics."""

from __future__ import annotations

import pytest

from tests.integration.conftest import explain, run_cli, table

EPOCHS = 2


def test_a_sweep_logged_to_mlflow_reads_back_with_params_and_metrics(tmp_path, monkeypatch):
    pytest.importorskip("mlflow")
    from mlflow import MlflowClient

    monkeypatch.delenv("MLFLOW_TRACKING_URI", raising=False)  # the default: a database inside the sweep
    proc = run_cli(
        "--space", "batch_grid", "--results-dir", str(tmp_path), "--name", "tracked", "--epochs", str(EPOCHS),
        "--set", "micro_batch_per_worker=[16,32]", "--no-dashboard", "--no-report", "--log-to", "mlflow",
    )  # fmt: skip
    assert proc.returncode == 0, explain(proc)
    sweep = tmp_path / "tracked"
    trials = {r["trial_id"]: r for r in table(sweep, "trials").to_pylist()}

    client = MlflowClient(f"sqlite:///{sweep / 'mlflow.db'}")
    experiment = client.get_experiment_by_name("tracked")
    runs = client.search_runs([experiment.experiment_id])
    assert sorted(r.info.run_name for r in runs) == sorted(p.name for p in (sweep / "tensorboard").iterdir())
    for run in runs:
        trial = trials[run.data.tags["trial_id"]]
        assert run.info.status == "FINISHED"
        for name in ("num_workers", "micro_batch_per_worker", "model", "dataset", "epochs"):
            assert run.data.params[name] == str(trial[name]), name
        assert not set(run.data.params) & set(run.data.metrics)
        assert run.data.metrics["throughput"] == pytest.approx(trial["throughput"], rel=1e-9)
        history = client.get_metric_history(run.info.run_id, "train/loss")
        assert sorted(m.step for m in history) == list(range(EPOCHS))
