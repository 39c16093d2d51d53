"""Trackers: ``--log-to mlflow|wandb`` refused in one line, exit 2, leaving nothing behind, when it cannot start;
MLflow's runs, params and metrics read back with MLflow's own client; TensorBoard's HParams sessions."""

from __future__ import annotations

import struct
from importlib.util import find_spec
from types import SimpleNamespace

import pytest

import raysweep
from raysweep.core.errors import UsageError
from raysweep.core.params import TrialParams
from raysweep.core.schema import EPOCH_KEY, TRIAL_KEY
from raysweep.core.spec import SPEC_KEY, TrialSpec
from raysweep.tensorboard_logger import TensorBoardCallback, run_name
from raysweep.tune import main
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


def test_mlflow_runs_are_named_as_tensorboard_with_parameters_as_params_and_measurements_as_metrics(tmp_path):
    pytest.importorskip("mlflow")
    from mlflow import MlflowClient

    from raysweep.mlflow_logger import MLflowCallback, mlflow_uri

    uri = mlflow_uri(tmp_path)
    assert uri == f"sqlite:///{tmp_path.resolve() / 'mlflow.db'}"  # a database store inside the sweep
    callback, trial = MLflowCallback(uri, "sweep-a"), fake_trial("abc123", num_workers=2, zero_stage=2)
    callback.log_trial_start(trial)
    callback.log_trial_result(1, trial, epoch_result(0, 2.0, 100.0))
    callback.log_trial_result(2, trial, epoch_result(1, 1.5, 120.0))
    callback.log_trial_end(trial)

    client = MlflowClient(uri)
    (run,) = client.search_runs([client.get_experiment_by_name("sweep-a").experiment_id])
    assert run.info.run_name == run_name("abc123", TrialParams(num_workers=2, zero_stage=2)) == "abc123-w2-mb32-acc1-z2"
    assert run.info.status == "FINISHED"
    assert run.data.params["num_workers"] == "2" and run.data.params["zero_stage"] == "2"
    assert run.data.params["global_batch"] == "64"  # the resolved configuration, as the trials table has it
    assert not set(run.data.params) & set(run.data.metrics)  # parameters are never metrics
    assert run.data.metrics == {"train/loss": 1.5, "perf/samples_per_second": 120.0, "throughput": 120.0,
                                "optimizer_steps": 8.0}  # fmt: skip
    history = client.get_metric_history(run.info.run_id, "train/loss")
    assert [(m.step, m.value) for m in history] == [(0, 2.0), (1, 1.5)]


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


def test_tensorboard_runs_carry_the_hparams_session_of_their_trial(tmp_path):
    from tensorboardX.proto import event_pb2
    from tensorboardX.proto.plugin_hparams_pb2 import HParamsPluginData

    callback, trial = TensorBoardCallback(tmp_path), fake_trial("abc123", num_workers=2, optimizer="sgd")
    callback.log_trial_start(trial)
    callback.log_trial_result(1, trial, epoch_result(0, 2.0, 100.0))
    callback.log_trial_end(trial)
    (run,) = (tmp_path / "tensorboard").iterdir()
    sessions = {}
    for path in run.glob("events.out.tfevents.*"):
        data, i = path.read_bytes(), 0
        while i < len(data):
            (length,) = struct.unpack("<Q", data[i : i + 8])
            event = event_pb2.Event.FromString(data[i + 12 : i + 12 + length])  # TFRecord: length, CRC, data, CRC
            i += 12 + length + 4
            for value in event.summary.value:
                if value.tag.startswith("_hparams_/"):
                    sessions[value.tag] = HParamsPluginData.FromString(value.metadata.plugin_data.content)
    assert set(sessions) == {"_hparams_/session_start_info", "_hparams_/session_end_info"}  # no experiment summary
    hparams = sessions["_hparams_/session_start_info"].session_start_info.hparams
    assert hparams["num_workers"].number_value == 2 and hparams["optimizer"].string_value == "sgd"
    assert hparams["global_batch"].number_value == 64
