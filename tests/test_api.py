"""The Python API: bad values raise UsageError (the CLI's messages) before Ray starts; load_sweep reads tables."""

from __future__ import annotations

import subprocess
import sys
from pathlib import Path

import pytest

import raysweep
from raysweep.core.errors import UsageError
from raysweep.core.store import ResultStore
from tests.cli_helpers import no_sweep_starts  # noqa: F401


@pytest.mark.parametrize(
    ("space", "keywords", "message"),
    [
        ("no_such_space", {}, "unknown space 'no_such_space' (all: --list-spaces"),
        ("batch_grid", {"overrides": {"num_workers": 0}}, "num_workers must be a positive integer, got 0"),
        ("batch_grid", {"overrides": {"no_such_param": 1}}, "no_such_param"),
        ("batch_grid", {"max_failures": -1}, "--max-failures must be >= 0, got -1"),
        ("batch_grid", {"collective_timeout": 0}, "--collective-timeout must be a positive number of seconds"),
        ("batch_grid", {"name": "../up"}, "sweep"),
        ({"axes": {"epochs": [1]}, "colour": "red"}, {}, "unknown key 'colour'"),
        ({"fixed": {"engine": "jax"}}, {}, "engine='jax' is not one of deepspeed, ddp, fsdp"),
        (42, {}, "space must be a bundled name, a .yaml path or a mapping, got int"),
    ],
)
def test_bad_input_raises_usage_error_naming_it_and_starts_nothing(tmp_path, space, keywords, message):
    results = tmp_path / "results"
    with pytest.raises(UsageError) as e:
        raysweep.run_sweep(space, results_dir=results, dashboard=False, **keywords)
    assert message in str(e.value)
    assert not results.exists()


def test_a_results_dir_that_is_a_file_is_refused(tmp_path):
    file = tmp_path / "taken"
    file.write_text("")
    with pytest.raises(UsageError, match="is a file, not a directory"):
        raysweep.run_sweep("batch_grid", results_dir=file)


def test_a_good_space_reaches_ray_and_only_then_the_tripwire(tmp_path):
    with pytest.raises(AssertionError, match="reached run_sweep"):
        raysweep.run_sweep({"fixed": {"epochs": 1}}, results_dir=tmp_path, name="ok")


def test_plan_sweep_is_the_dry_run_as_a_typed_plan_and_starts_nothing():
    plan = raysweep.plan_sweep("batch_grid", overrides={"num_workers": [1, 2]}, assume_gpus=8, repeats=1)
    assert plan.cluster == "64 CPU + 8 GPU" and plan.space.name == "batch_grid"
    assert {(t.num_workers, t.device, t.precision) for t in plan.trials} == {(1, "gpu", "bf16"), (2, "gpu", "bf16")}
    assert len(plan.trials) == 10 and plan.search is None
    with_search = raysweep.plan_sweep("batch_grid", assume_gpus=8, find_max_batch=True)
    assert with_search.search and with_search.search[0].startswith("find-max-batch: 1 configuration would be probed")


def test_plan_sweep_refuses_what_run_sweep_refuses():
    with pytest.raises(UsageError, match="lr must be a finite number, got inf"):
        raysweep.plan_sweep("batch_grid", overrides={"lr": float("inf")}, assume_gpus=8)


def test_load_sweep_reads_the_tables_of_a_sweep_directory(tmp_path):
    store = ResultStore(tmp_path, "s")
    store.write_rows("trials", "t1", [{"trial_id": "t1", "status": "completed", "num_workers": 2}])
    result = raysweep.load_sweep(store.root)
    assert result.path == store.root and result.report is None
    assert result.trials.column("num_workers").to_pylist() == [2]
    assert result.epochs.num_rows == 0 and result.ranks.num_rows == 0
    assert result.all_completed


def test_load_sweep_of_a_directory_without_a_sweep_is_a_usage_error(tmp_path):
    with pytest.raises(UsageError, match="does not exist"):
        raysweep.load_sweep(tmp_path / "nowhere")
    with pytest.raises(UsageError, match="not a raysweep sweep"):
        raysweep.load_sweep(tmp_path)


def test_ray_chatter_is_recognised_and_raysweep_lines_are_not():
    from raysweep.runtime.ray_logs import is_chatter

    assert is_chatter("Reporting training result 3: TrainingReport(checkpoint=None, metrics={...}) from rank 0")
    assert is_chatter("Failed to query Ray Train Controller actor state. State API may be temporarily unavailable.")
    assert is_chatter(
        "(TrainController pid=5954) core_worker.cc:2465: Actor with class name: 'PreemptionWatcher' and ID: "
        "'dcd3b760efc7420705c57fdb01000000' has constructor arguments in the object store and max_restarts > 0."
    )
    assert not is_chatter("raysweep: resumed from checkpoint after epoch 0")


def test_the_placement_group_cleaners_lines_are_all_chatter_and_trial_workers_are_not():
    from raysweep.runtime.ray_logs import is_chattering_actor

    assert is_chattering_actor("PlacementGroupCleaner")
    assert not is_chattering_actor("RayTrainWorker")
    assert not is_chattering_actor("")


def test_the_controllers_traceback_of_a_cleaner_stopped_late_is_dropped_and_its_other_errors_are_kept():
    from raysweep.runtime.ray_logs import without_dropped_tracebacks

    late = [
        "Failed to stop PlacementGroupCleaner gracefully.",
        "Traceback (most recent call last):",
        '  File ".../ray/train/v2/_internal/callbacks/placement_group_callback.py", line 126, in _stop_cleaner',
        "    ray.get(self._cleaner.stop.remote(), timeout=self._stop_timeout)",
        "ray.exceptions.GetTimeoutError: Get timed out: some object(s) not ready.",
    ]
    other = ["Failed to stop PlacementGroupCleaner gracefully.", "Traceback (most recent call last):", "OSError: x"]
    lines = ["raysweep: before", *late, "raysweep: between", *other, "raysweep: after"]
    assert without_dropped_tracebacks(lines) == ["raysweep: before", "raysweep: between", *other, "raysweep: after"]


def test_forwarded_worker_lines_lose_the_chatter_and_keep_the_rest():
    from ray._private.ray_logging import global_worker_stdstream_dispatcher as dispatcher

    from raysweep.runtime.ray_logs import PRINTER, quiet_forwarded_logs

    printed, saved = [], list(dispatcher.handlers)
    dispatcher.handlers = [(PRINTER, printed.append)]
    try:
        quiet_forwarded_logs()
        dispatcher.emit({"pid": 1, "is_err": True, "lines": ["Reporting training result 1: TrainingReport(...)"]})
        dispatcher.emit(
            {"pid": 2, "is_err": False, "lines": ["raysweep: resumed", "State API may be temporarily unavailable"]}
        )
    finally:
        dispatcher.handlers = saved
    assert printed == [{"pid": 2, "is_err": False, "lines": ["raysweep: resumed"]}]


def test_load_sweep_reads_an_older_sweep_and_refuses_a_newer_one_naming_its_version(tmp_path):
    from raysweep.core.schema import SCHEMA_VERSION

    store = ResultStore(tmp_path, "s")
    store.write_rows("trials", "t1", [{"status": "completed", "num_workers": 2}])
    (store.root / "sweep.json").write_text('{"sweep": "s"}')  # written before versions were recorded
    assert raysweep.load_sweep(store.root).trials.num_rows == 1
    (store.root / "sweep.json").write_text(f'{{"schema_version": {SCHEMA_VERSION + 1}, "raysweep_version": "9.9"}}')
    with pytest.raises(UsageError, match=f"schema version {SCHEMA_VERSION + 1}.*raysweep 9.9 or newer"):
        raysweep.load_sweep(store.root)


def test_the_profilers_lines_from_every_rank_and_the_raylets_worker_count_are_chatter():
    from raysweep.runtime.ray_logs import is_chatter

    # as Ray forwards them from a 2-rank CPU trial's profiled window (the last deduplicated)
    assert is_chatter("USDT:2026-12-05 23:09:34 25489:27626 SyncActivityProfilerHandler.cpp:39] profiler_start")
    assert is_chatter("USDT:2026-12-05 23:09:53 25359:27628 SyncActivityProfilerHandler.cpp:46] profiler_stop")
    assert is_chatter("ERROR: External init callback must run in same thread as registerClient (1554323136 != -1003)")
    assert is_chatter(
        "ERROR:2026-12-05 23:10:02 24631:27154 DeviceProperties.cpp:56] gpuGetDeviceCount failed with code 35"
        "\x1b[32m [repeated 4x across cluster]\x1b[0m"
    )
    assert is_chatter("WARNING: 8 PYTHON worker processes have been started on node: a5f5 with address: 192.0.2.2")
    assert not is_chatter("RuntimeError: CUDA error: an illegal memory access was encountered")
    assert not is_chatter("raysweep: warning: rank 1 is 1.4x slower than rank 0")


def test_the_sweeps_modules_leave_torch_to_the_thread_beside_ray_init():
    """torch (seconds to import where CUDA's libraries load) is imported on a thread while Ray starts
    (``import_train_torch_in_background``); a module-level import on the way to ``ray.init`` would put it
    first on the launch's path."""
    code = "import sys, raysweep.tune, raysweep.api, raysweep.sweep; print('torch' in sys.modules)"
    root = Path(__file__).resolve().parents[1]
    result = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, check=True, cwd=root)
    assert result.stdout.strip() == "False"


def test_a_trial_actors_traceback_of_its_sigterm_at_the_sweeps_end_is_dropped_and_other_ignored_ones_kept():
    """Ray ends the trial actors as the sweep ends; one inside a weak reference's callback then prints Python's
    "Exception ignored in" of the SystemExit Ray's SIGTERM handler raised (seen at the embedded default's end)."""
    from raysweep.runtime.ray_logs import without_dropped_tracebacks

    sigterm = [
        "Exception ignored in: <function WeakSet.__init__.<locals>._remove at 0x7f1de6591ee0>",
        "Traceback (most recent call last):",
        '  File ".../python3.11/_weakrefset.py", line 39, in _remove',
        "    def _remove(item, selfref=ref(self)):",
        "",
        '  File ".../ray/_private/worker.py", line 1063, in sigterm_handler',
        "    raise_sys_exit_with_custom_error_message(",
        '  File "python/ray/_raylet.pyx", line 712, in ray._raylet.raise_sys_exit_with_custom_error_message',
        "SystemExit: 1",
    ]
    other = [
        "Exception ignored in: <function Thing.__del__ at 0x1>",
        "Traceback (most recent call last):",
        '  File "thing.py", line 3, in __del__',
        "SystemExit: 1",
    ]
    lines = ["raysweep: before", *sigterm, "raysweep: between", *other, "raysweep: after"]
    assert without_dropped_tracebacks(lines) == ["raysweep: before", "raysweep: between", *other, "raysweep: after"]
