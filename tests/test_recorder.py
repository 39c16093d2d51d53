"""The recorder rebuilds the workers' typed reports from Tune's results and writes rows of the schema."""

from __future__ import annotations

import dataclasses
import pickle
import types

import pytest
from ray.exceptions import RayTaskError
from ray.train import WorkerGroupError
from ray.train.v2._internal.exceptions import UserExceptionWithTraceback

from raysweep.core.errors import RankOutOfMemory
from raysweep.core.params import TrialParams
from raysweep.core.schema import (
    EPOCH_KEY,
    EPOCHS,
    RANKS,
    RANKS_KEY,
    TRIAL_KEY,
    TRIALS,
    EpochReport,
    RankReport,
    TrialReport,
    from_metrics,
    params_row,
    row_of,
)
from raysweep.core.store import ResultStore
from raysweep.results.recorder import ResultTablesCallback, peak_memory_of
from tests.specs import tune_config


def trial(params: TrialParams):
    return types.SimpleNamespace(trial_id="t1", config=tune_config(params), error_file=None)


def result(epoch: int, final: bool) -> dict:
    """What a worker's report() sends: asdict of the reports under the fixed keys."""
    ranks = [
        RankReport(rank=r, node=f"n{r}", device_name="cpu", step_time_ms=10.0 + r, peak_mem_gib=1.0 + r) for r in (0, 1)
    ]
    return {
        "final": final,
        EPOCH_KEY: dataclasses.asdict(EpochReport(epoch=epoch, train_loss=1.0 / (epoch + 1), throughput=100.0)),
        TRIAL_KEY: dataclasses.asdict(TrialReport(samples_per_epoch=64, throughput=100.0, since_first_step_s=2.0)),
        RANKS_KEY: {str(r.rank): dataclasses.asdict(r) for r in ranks},
    }


def test_reports_survive_the_trip_as_dicts():
    report = TrialReport(samples_per_epoch=64, mfu=0.4, retries=2)
    assert from_metrics(TrialReport, dataclasses.asdict(report)) == report
    assert "since_first_step_s" not in row_of(report)  # transport only, not a column


def test_a_completed_trial_writes_one_row_per_table_entry_with_the_derived_configuration(tmp_path):
    store = ResultStore(tmp_path, "s")
    params = TrialParams.from_dict({"num_workers": 2, "global_batch": 64, "epochs": 2}).resolve(False)
    recorder, t = ResultTablesCallback(store), trial(params)
    recorder.on_trial_start(0, [], t)
    recorder.on_trial_result(0, [], t, result(0, final=False))
    recorder.on_trial_result(0, [], t, result(1, final=True))
    recorder.on_trial_complete(0, [], t)
    (row,) = store.read("trials").to_pylist()
    assert row["status"] == "completed" and row["error"] is None
    assert {k: row[k] for k in params_row(params)} == pytest.approx(params_row(params))
    assert row["micro_batch_per_worker"] == 32 and row["global_batch"] == 64  # derived: 64 / 2 ranks
    assert row["num_nodes"] == 2 and row["node_ids"] == ["n0", "n1"] and row["peak_mem_gib"] == 2.0
    assert row["samples_per_epoch"] == 64 and row["mfu"] is None  # a column no code fills yet is NULL
    assert row["setup_s"] is not None and row["teardown_s"] >= 0
    assert [r["epoch"] for r in store.read("epochs").to_pylist()] == [0, 1]
    assert [r["busy_ms"] for r in store.read("ranks").to_pylist()] == [None, None]
    assert store.read("trials").schema.equals(TRIALS) and store.read("epochs").schema.equals(EPOCHS)
    assert store.read("ranks").schema.equals(RANKS)


def test_a_trial_tune_ends_before_its_last_epoch_is_stopped_and_keeps_its_epochs(tmp_path):
    """Tune ends a trial that reported, before its last epoch, only when the sweep's scheduler stops it."""
    store = ResultStore(tmp_path, "s")
    recorder, t = ResultTablesCallback(store), trial(TrialParams(epochs=4))
    recorder.on_trial_result(0, [], t, result(0, final=False))
    recorder.on_trial_complete(0, [], t)
    (row,) = store.read("trials").to_pylist()
    assert row["status"] == "stopped" and row["error"] is None
    assert [r["epoch"] for r in store.read("epochs").to_pylist()] == [0]


def test_a_resumed_sweep_keeps_a_stopped_row_when_tune_runs_the_trial_again(tmp_path):
    """Stopped after Tune's last experiment checkpoint: the resumed run restarts it, its driver returns at once
    (``finished_before``) without a report, and the recorder of the new run keeps the stopped row."""
    store = ResultStore(tmp_path, "s")
    first, t = ResultTablesCallback(store), trial(TrialParams(epochs=4))
    first.on_trial_result(0, [], t, result(0, final=False))
    first.on_trial_complete(0, [], t)
    assert store.is_finished("t1")
    resumed = ResultTablesCallback(store)
    resumed.on_trial_complete(0, [], t)
    (row,) = store.read("trials").to_pylist()
    assert row["status"] == "stopped"


def test_a_trial_that_ends_without_any_report_is_failed(tmp_path):
    store = ResultStore(tmp_path, "s")
    recorder, t = ResultTablesCallback(store), trial(TrialParams())
    recorder.on_trial_complete(0, [], t)
    (row,) = store.read("trials").to_pylist()
    assert row["status"] == "failed" and "before its last epoch" in row["error"]


def test_the_peak_memory_comes_from_the_typed_error_inside_ray_trains_and_tunes_wrappers():
    oom = RankOutOfMemory(1, "CUDA out of memory", 7.25)
    assert str(oom) == "OutOfMemoryError on rank 1: CUDA out of memory (peak_mem_gib=7.250)"
    # a worker's exception, as Ray Train keeps it, inside the driver's, as Tune keeps it; pickled on the way
    worker = UserExceptionWithTraceback(oom, traceback_str="Traceback ...")
    driver = RayTaskError("train_driver_fn", "Traceback ...", WorkerGroupError("rank 1 failed", {1: worker}))
    assert peak_memory_of(pickle.loads(pickle.dumps(driver))) == 7.25
    assert peak_memory_of(RuntimeError("boom")) is None and peak_memory_of(None) is None


def test_an_out_of_memory_error_writes_an_oom_row_with_the_typed_errors_peak(tmp_path):
    store = ResultStore(tmp_path, "s")
    error, pickled = tmp_path / "error.txt", tmp_path / "error.pkl"
    error.write_text("Traceback ...\nRuntimeError: OutOfMemoryError on rank 0: injected (peak_mem_gib=2.500)\n")
    pickled.write_bytes(pickle.dumps(RayTaskError("f", "tb", RankOutOfMemory(0, "injected", 2.5))))
    t = types.SimpleNamespace(
        trial_id="t1", config=tune_config(TrialParams()), error_file=str(error), pickled_error_file=str(pickled)
    )
    ResultTablesCallback(store).on_trial_error(0, [], t)
    (row,) = store.read("trials").to_pylist()
    assert row["status"] == "oom" and row["peak_mem_gib"] == 2.5 and "OutOfMemoryError" in row["error"]


def test_the_error_column_names_the_ranks_own_exception_not_rays_wrappers(tmp_path):
    try:
        try:
            raise KeyError("cls")
        except KeyError:
            raise ValueError("arrays: /data/arr8 has no train/ folder\nmore detail") from None
    except ValueError as e:
        raised_on_rank = e
    worker = UserExceptionWithTraceback(raised_on_rank, traceback_str="Traceback ...")
    driver = RayTaskError("train_driver_fn", "Traceback ...", WorkerGroupError("rank 0 failed", {0: worker}))
    store = ResultStore(tmp_path, "s")
    error, pickled = tmp_path / "error.txt", tmp_path / "error.pkl"
    error.write_text("Traceback ...\n[Rank 0 Error Snippet]:\n")
    pickled.write_bytes(pickle.dumps(driver))
    t = types.SimpleNamespace(
        trial_id="t1", config=tune_config(TrialParams()), error_file=str(error), pickled_error_file=str(pickled)
    )
    ResultTablesCallback(store).on_trial_error(0, [], t)
    (row,) = store.read("trials").to_pylist()
    assert row["error"] == "ValueError: arrays: /data/arr8 has no train/ folder"


def test_without_the_exception_the_error_column_skips_rays_snippet_header():
    from raysweep.results.recorder import error_summary

    assert error_summary(
        "Traceback (most recent call last):\n  ...\nRuntimeError: boom\n[Rank 0 Error Snippet]:\n"
    ) == ("RuntimeError: boom")
