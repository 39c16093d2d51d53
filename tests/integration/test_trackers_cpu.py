"""The end of a sweep of 2-rank CPU trials, logged to MLflow: its runs read back with MLflow's own client (a run for
the sweep with the report as artifacts, the trials' runs nested in it, named as the TensorBoard runs, the trials'
parameters as params, their figures as metrics under the tables' column names), the artifacts inside the sweep, and
the terminal ends with the summary and the report's paths, nothing of the profiled windows' per-rank lines in it."""

from __future__ import annotations

from pathlib import Path

import pytest

from raysweep.runtime.ray_logs import CHATTER
from tests.integration.conftest import table


@pytest.fixture(scope="module")
def sweep(two_rank_sweep) -> tuple[Path, list[str]]:
    """The session's 2-rank sweep (conftest.two_rank_sweep), logged to MLflow: its directory and its terminal."""
    pytest.importorskip("mlflow")
    root, lines, logged = two_rank_sweep
    assert logged
    return root, lines


def test_the_sweeps_mlflow_runs_nest_the_trials_under_the_sweeps_run_with_the_tables_figures(sweep):
    from mlflow import MlflowClient

    root, _ = sweep
    trials = {r["trial_id"]: r for r in table(root, "trials").to_pylist()}
    epochs = table(root, "epochs").to_pylist()
    client = MlflowClient(f"sqlite:///{root / 'mlflow.db'}")
    runs = client.search_runs([client.get_experiment_by_name("tracked").experiment_id])
    (sweep_run,) = [r for r in runs if "trial_id" not in r.data.tags]
    trial_runs = [r for r in runs if "trial_id" in r.data.tags]
    assert sweep_run.info.run_name == "tracked" and sweep_run.info.status == "FINISHED"
    assert sorted(r.info.run_name for r in trial_runs) == sorted(p.name for p in (root / "tensorboard").iterdir())
    assert len(trial_runs) == len(trials) == 2
    for run in trial_runs:
        trial = trials[run.data.tags["trial_id"]]
        assert run.data.tags["mlflow.parentRunId"] == sweep_run.info.run_id
        assert run.info.status == "FINISHED"
        for name in ("num_workers", "micro_batch_per_worker", "model", "dataset", "epochs"):
            assert run.data.params[name] == str(trial[name]), name
        assert not set(run.data.params) & set(run.data.metrics)
        assert not [name for name in run.data.metrics if "/" in name]  # the tables' names, no second name
        for name in ("peak_mem_gib", "setup_s"):  # the trials row's figures, at the trial's end
            assert run.data.metrics[name] == pytest.approx(trial[name], rel=1e-9), name
        rows = sorted((e for e in epochs if e["trial_id"] == trial["trial_id"]), key=lambda e: e["epoch"])
        for name in ("val_accuracy", "train_loss", "throughput"):  # the epochs rows' figures, the epoch as the step
            history = sorted((m.step, m.value) for m in client.get_metric_history(run.info.run_id, name))
            assert history == [(e["epoch"], pytest.approx(e[name], rel=1e-9)) for e in rows], name
    listed = {a.path for a in client.list_artifacts(sweep_run.info.run_id, "report")}
    assert {"report/report.md", "report/report.html"} <= listed
    (attached,) = (root / "mlartifacts").rglob("report.md")  # the artifacts stay inside the sweep
    assert attached.read_text() == (root / "report" / "report.md").read_text()


def test_the_summary_and_the_report_end_the_terminal_and_no_profiler_line_reaches_it(sweep):
    root, lines = sweep
    # the trials ran their profiled windows (their collective figures come from them)
    assert all(v is not None for v in table(root, "trials").column("comm_kernel_ms").to_pylist())
    leaked = [line for line in lines if any(marker in line for marker in CHATTER)]
    assert leaked == [], leaked
    tail = [line for line in lines if line.strip()][-4:]
    assert tail[0].startswith("2 trials in ") and "results: " in tail[0], lines[-20:]
    assert tail[1].startswith("  query: python -m raysweep.query"), lines[-20:]
    assert tail[2].startswith("report: ") and tail[2].endswith("tracked/report/report.md"), lines[-20:]
    assert tail[3].startswith("report: ") and tail[3].endswith("tracked/report/report.html"), lines[-20:]
