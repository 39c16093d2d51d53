"""Trackers: ``--log-to mlflow|wandb`` refused in one line, exit 2, leaving nothing behind, when it cannot start
(a tracking server that does not answer included); one name per figure, the tables' columns; MLflow's sweep run
with the trials' runs nested, params and metrics read back with MLflow's own client, its artifacts in the sweep;
TensorBoard's scalars and HParams sessions."""

from __future__ import annotations

import re
import socket
import struct
import time
from importlib.util import find_spec
from pathlib import Path
from types import SimpleNamespace

import pytest

import raysweep
from raysweep.core.errors import UsageError
from raysweep.core.params import TrialParams
from raysweep.core.schema import (
    EPOCH_KEY,
    EPOCHS,
    TRACKED_EPOCH_COLUMNS,
    TRACKED_TRIAL_COLUMNS,
    TRIAL_KEY,
    TRIALS,
)
from raysweep.core.spec import SPEC_KEY, TrialSpec
from raysweep.core.store import ResultStore
from raysweep.tune import main
from raysweep.watch.tensorboard_logger import TensorBoardCallback, run_name
from raysweep.watch.trackers import attach_report, start_trackers
from tests.cli_helpers import no_sweep_starts  # noqa: F401


@pytest.mark.parametrize("tracker", ["mlflow", "wandb"])
def test_missing_tracker_package_is_one_line_exit_2_and_nothing_written(tracker, tmp_path, capsys):
    if find_spec(tracker) is not None:
        pytest.skip(f"{tracker} is installed here")
    results = tmp_path / "results"
    code = main(["--space", "batch_grid", "--results-dir", str(results), "--log-to", tracker])
    out, err = capsys.readouterr()
    assert code == 2
    assert err.strip().splitlines() == [
        f"raysweep: error: --log-to {tracker} needs the {tracker} package, which is not installed "
        f"(pip install {tracker})"
    ]
    assert out == "" and not results.exists()


def test_unknown_tracker_is_refused_by_the_parser_in_one_line(capsys):
    assert main(["--space", "batch_grid", "--log-to", "comet"]) == 2
    (line,) = capsys.readouterr().err.splitlines()
    assert line.startswith("raysweep: error: argument --log-to: invalid choice: 'comet'")


def fake_trial(trial_id: str, **params) -> SimpleNamespace:
    """What the loggers read of a Tune trial: its id and the parameters in its config."""
    spec = TrialSpec("s", "/tmp/s", "/tmp/s/_ray", 600, 0, True, 0, TrialParams(**params))
    return SimpleNamespace(trial_id=trial_id, config={SPEC_KEY: spec})


def epoch_result(epoch: int, loss: float, throughput: float) -> dict:
    return {
        EPOCH_KEY: {"epoch": epoch, "train_loss": loss, "throughput": throughput, "val_accuracy": None},
        TRIAL_KEY: {"throughput": throughput, "mfu": None, "optimizer_steps": 4 * (epoch + 1)},
    }


def test_one_name_per_figure_the_tables_columns_per_epoch_and_at_the_trials_end():
    assert set(TRACKED_EPOCH_COLUMNS) <= set(EPOCHS.names) and set(TRACKED_TRIAL_COLUMNS) <= set(TRIALS.names)
    assert not set(TRACKED_EPOCH_COLUMNS) & set(TRACKED_TRIAL_COLUMNS)  # a name has one history
    for name in ("train_loss", "val_loss", "val_accuracy", "throughput", "step_time_ms", "data_wait_fraction"):
        assert name in TRACKED_EPOCH_COLUMNS, name
    for name in ("peak_mem_gib", "setup_s", "mfu", "comm_overlap", "retries"):
        assert name in TRACKED_TRIAL_COLUMNS, name
    for name in ("epoch", "status", "compiled", "num_workers", "params_json"):  # keys, text, flags, parameters
        assert name not in TRACKED_EPOCH_COLUMNS + TRACKED_TRIAL_COLUMNS, name


def recorded_trial(root, trial_id: str, **figures) -> None:
    """The trials row the recorder writes as a trial ends (before the trackers' ``log_trial_end``)."""
    ResultStore(root.parent, root.name).write_rows("trials", trial_id, [{"status": "completed", **figures}])


def test_mlflow_logs_a_sweep_run_with_each_trial_nested_named_as_tensorboard_and_figures_as_columns(tmp_path):
    pytest.importorskip("mlflow")
    from mlflow import MlflowClient

    from raysweep.watch.mlflow_logger import MLflowCallback, mlflow_uri

    uri = mlflow_uri(tmp_path)
    assert uri == f"sqlite:///{tmp_path.resolve() / 'mlflow.db'}"  # a database store inside the sweep
    callback, trial = MLflowCallback(uri, "sweep-a", tmp_path), fake_trial("abc123", num_workers=2, zero_stage=2)
    callback.setup()
    callback.log_trial_start(trial)
    callback.log_trial_result(1, trial, epoch_result(0, 2.0, 100.0))
    callback.log_trial_result(2, trial, epoch_result(1, 1.5, 120.0))
    recorded_trial(tmp_path, "abc123", peak_mem_gib=1.25, setup_s=3.5, throughput=110.0, mfu=None)
    callback.log_trial_end(trial)
    callback.on_experiment_end([SimpleNamespace(status="TERMINATED")])

    client = MlflowClient(uri)
    experiment = client.get_experiment_by_name("sweep-a")
    runs = {r.info.run_name: r for r in client.search_runs([experiment.experiment_id])}
    assert sorted(runs) == ["abc123-w2-mb32-acc1-z2", "sweep-a"]  # the trial's run is named as TensorBoard's
    sweep_run, run = runs["sweep-a"], runs[run_name("abc123", TrialParams(num_workers=2, zero_stage=2))]
    assert run.data.tags["mlflow.parentRunId"] == sweep_run.info.run_id
    assert run.info.status == sweep_run.info.status == "FINISHED"
    assert run.data.params["num_workers"] == "2" and run.data.params["zero_stage"] == "2"
    assert run.data.params["global_batch"] == "64"  # the resolved configuration, as the trials table has it
    assert not set(run.data.params) & set(run.data.metrics)  # parameters are never metrics
    # the epoch's figures (the last epoch's value is the latest) and the trials row's figures the epochs lack;
    # the trials row's own throughput is not logged: throughput is the epochs' history
    assert run.data.metrics == {"train_loss": 1.5, "throughput": 120.0, "peak_mem_gib": 1.25, "setup_s": 3.5}
    history = client.get_metric_history(run.info.run_id, "train_loss")
    assert [(m.step, m.value) for m in history] == [(0, 2.0), (1, 1.5)]
    assert [m.step for m in client.get_metric_history(run.info.run_id, "peak_mem_gib")] == [1]  # the last epoch


def test_mlflow_keeps_artifacts_in_the_sweep_and_attaches_the_report_to_the_sweeps_run(tmp_path):
    pytest.importorskip("mlflow")
    from mlflow import MlflowClient

    from raysweep.watch.mlflow_logger import MLflowCallback, mlflow_uri

    root = tmp_path / "sweep-b"
    report = root / "report" / "report.md"
    report.parent.mkdir(parents=True)
    report.write_text("# Sweep sweep-b\n")
    (report.parent / "report.html").write_text("<html></html>")
    callback = MLflowCallback(mlflow_uri(root), "sweep-b", root)
    callback.setup()
    attach_report([object(), callback], report)  # the sweep passes all its callbacks
    attach_report([callback], None)  # no report written: nothing to attach

    client = MlflowClient(mlflow_uri(root))
    experiment = client.get_experiment_by_name("sweep-b")
    assert experiment.artifact_location == (root / "mlartifacts").resolve().as_uri()
    listed = {a.path for a in client.list_artifacts(callback.sweep_run, "report")}
    assert listed == {"report/report.md", "report/report.html"}
    (stored,) = (root / "mlartifacts").rglob("report.md")
    assert stored.read_text() == "# Sweep sweep-b\n"
    assert not (tmp_path / "mlruns").exists() and not Path("mlruns").exists()


def test_a_store_the_user_names_keeps_its_own_artifact_location(tmp_path, monkeypatch):
    from raysweep.watch.mlflow_logger import artifact_location, mlflow_uri

    root = tmp_path / "sweep-c"
    assert artifact_location(mlflow_uri(root), root) == (root / "mlartifacts").resolve().as_uri()
    monkeypatch.setenv("MLFLOW_TRACKING_URI", f"sqlite:///{tmp_path}/shared.db")
    assert mlflow_uri(root) == f"sqlite:///{tmp_path}/shared.db"
    assert artifact_location(mlflow_uri(root), root) is None  # the store's default, not the sweep


def closed_port() -> int:
    """A local TCP port nothing listens on (bound, then released)."""
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


def test_a_tracking_server_that_does_not_answer_is_refused_within_seconds(tmp_path, monkeypatch):
    pytest.importorskip("mlflow")
    uri = f"http://127.0.0.1:{closed_port()}"
    monkeypatch.setenv("MLFLOW_TRACKING_URI", uri)
    started = time.monotonic()
    with pytest.raises(UsageError, match=f"no MLflow tracking server answers at {re.escape(uri)} "):
        start_trackers(["mlflow"], "sweep-d", tmp_path / "sweep-d")
    assert time.monotonic() - started < 10  # MLflow's own client retries such a server for minutes


def test_an_unanswering_server_is_one_line_exit_2_before_ray_starts_and_leaves_nothing(tmp_path, monkeypatch, capsys):
    pytest.importorskip("mlflow")
    uri = f"http://user:secret@127.0.0.1:{closed_port()}/prefix"
    monkeypatch.setenv("MLFLOW_TRACKING_URI", uri)
    results = tmp_path / "results"
    code = main(["--space", "batch_grid", "--results-dir", str(results), "--log-to", "mlflow"])
    out, err = capsys.readouterr()
    assert code == 2
    (line,) = err.strip().splitlines()
    server = uri.replace("user:secret@", "")
    assert line.startswith(f"raysweep: error: --log-to mlflow: no MLflow tracking server answers at {server} ("), line
    assert "secret" not in line and not results.exists()


def test_a_tracker_that_cannot_start_is_one_line_exit_2_and_leaves_no_sweep_behind(tmp_path, monkeypatch, capsys):
    pytest.importorskip("mlflow")
    (tmp_path / "a-file").write_text("")  # a database under a file cannot be created
    monkeypatch.setenv("MLFLOW_TRACKING_URI", f"sqlite:///{tmp_path}/a-file/mlflow.db")
    results = tmp_path / "results"
    code = main(["--space", "batch_grid", "--results-dir", str(results), "--log-to", "mlflow"])
    out, err = capsys.readouterr()
    assert code == 2
    (line,) = err.strip().splitlines()
    assert line.startswith("raysweep: error: --log-to mlflow: cannot start MLflow at sqlite:///")
    assert not results.exists()


def test_the_api_takes_log_to_as_one_name_or_a_list(tmp_path):
    pytest.importorskip("mlflow")
    with pytest.raises(AssertionError, match="reached run_sweep"):  # the tracker started; Ray would be next
        raysweep.run_sweep({"fixed": {"epochs": 1}}, results_dir=tmp_path, name="one", log_to="mlflow")
    assert (tmp_path / "one" / "mlflow.db").is_file()
    with pytest.raises(UsageError, match=r"--log-to: unknown tracker 'comet' \(one of mlflow, wandb\)"):
        raysweep.run_sweep({"fixed": {"epochs": 1}}, results_dir=tmp_path, name="two", log_to=["mlflow", "comet"])
    assert not (tmp_path / "two").exists()


def test_tensorboard_runs_carry_the_hparams_session_of_their_trial_and_figures_named_as_columns(tmp_path):
    from tensorboardX.proto import event_pb2
    from tensorboardX.proto.plugin_hparams_pb2 import HParamsPluginData

    callback, trial = TensorBoardCallback(tmp_path), fake_trial("abc123", num_workers=2, optimizer="sgd")
    callback.log_trial_start(trial)
    callback.log_trial_result(1, trial, epoch_result(0, 2.0, 100.0))
    callback.log_trial_result(2, trial, epoch_result(1, 1.5, 120.0))
    recorded_trial(tmp_path, "abc123", peak_mem_gib=1.25, setup_s=3.5)
    callback.log_trial_end(trial)
    (run,) = (tmp_path / "tensorboard").iterdir()
    sessions, scalars = {}, {}
    for path in run.glob("events.out.tfevents.*"):
        data, i = path.read_bytes(), 0
        while i < len(data):
            (length,) = struct.unpack("<Q", data[i : i + 8])
            event = event_pb2.Event.FromString(data[i + 12 : i + 12 + length])  # TFRecord: length, CRC, data, CRC
            i += 12 + length + 4
            for value in event.summary.value:
                if value.tag.startswith("_hparams_/"):
                    sessions[value.tag] = HParamsPluginData.FromString(value.metadata.plugin_data.content)
                elif value.HasField("simple_value"):
                    scalars.setdefault(value.tag, {})[event.step] = value.simple_value
    assert set(sessions) == {"_hparams_/session_start_info", "_hparams_/session_end_info"}  # no experiment summary
    hparams = sessions["_hparams_/session_start_info"].session_start_info.hparams
    assert hparams["num_workers"].number_value == 2 and hparams["optimizer"].string_value == "sgd"
    assert hparams["global_batch"].number_value == 64
    assert scalars == {
        "train_loss": {0: 2.0, 1: 1.5},
        "throughput": {0: 100.0, 1: 120.0},
        "peak_mem_gib": {1: 1.25},
        "setup_s": {1: 3.5},
    }
