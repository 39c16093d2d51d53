"""Paths resolve where the user typed them; one sweep per directory; a resume's dry run; flags that would do
nothing are refused. In-process (no Ray): ``tests/integration/test_user_journey.py`` walks the same path for real.
"""

from __future__ import annotations

import json
import os
import signal
import subprocess
import sys
from pathlib import Path

import pytest

from raysweep.api import plan_resume, prepare_results_dir
from raysweep.core.errors import UsageError
from raysweep.core.params import TrialParams
from raysweep.core.paths import shell_path, user_path
from raysweep.core.store import ResultStore
from raysweep.core.sweep_lock import HOLDER_FILE, SweepRunning, lock_sweep
from raysweep.planning.space import load_space
from tests.cli_helpers import no_sweep_starts, run_main  # noqa: F401  (the tripwire fixture)


def test_a_relative_path_is_made_absolute_against_the_working_directory(tmp_path, monkeypatch):
    monkeypatch.chdir(tmp_path)
    assert user_path("arr8") == tmp_path / "arr8"
    assert user_path("a/../b") == tmp_path / "b"
    assert user_path("~/x") == Path.home() / "x"
    assert user_path(tmp_path / "abs") == tmp_path / "abs"


def test_a_printed_path_is_relative_inside_the_working_directory_absolute_outside_and_quoted(tmp_path, monkeypatch):
    (tmp_path / "here").mkdir()
    monkeypatch.chdir(tmp_path / "here")
    assert shell_path(tmp_path / "here" / "raysweep-results" / "s1") == "raysweep-results/s1"
    assert shell_path(tmp_path / "elsewhere") == str(tmp_path / "elsewhere")
    assert shell_path(tmp_path / "here" / "my results") == "'my results'"


def test_the_data_dir_of_a_space_resolves_fixed_and_as_an_axis(tmp_path, monkeypatch):
    monkeypatch.chdir(tmp_path)
    space = load_space("batch_grid").with_overrides({"data_dir": "arr8"}).with_paths_resolved()
    assert space.fixed["data_dir"] == str(tmp_path / "arr8")
    axis = load_space("batch_grid").with_overrides({"data_dir": ["a", "/abs/b"]}).with_paths_resolved()
    assert {t.data_dir for t in axis.expand()} == {str(tmp_path / "a"), "/abs/b"}
    assert load_space("batch_grid").with_paths_resolved().expand()[0].data_dir == ""  # no path: none made up


HOLD = """
import sys, time
from pathlib import Path
from raysweep.core.sweep_lock import lock_sweep
lock = lock_sweep(Path(sys.argv[1]), "sweep held")
print("held", flush=True)
time.sleep(600)
"""


def hold_lock(root: Path) -> subprocess.Popen:
    proc = subprocess.Popen([sys.executable, "-c", HOLD, str(root)], stdout=subprocess.PIPE, text=True)
    assert proc.stdout.readline().strip() == "held"
    return proc


def test_a_running_sweeps_directory_is_refused_naming_its_process_and_a_killed_holder_leaves_no_lock(tmp_path):
    root = tmp_path / "s"
    root.mkdir()
    holder = hold_lock(root)
    try:
        with pytest.raises(SweepRunning, match=rf"in use by a running sweep \(process {holder.pid} on host "):
            lock_sweep(root, "sweep s")
    finally:
        os.kill(holder.pid, signal.SIGKILL)  # kill -9: the kernel drops the lock with the process
        holder.wait()
    lock = lock_sweep(root, "sweep s")
    assert json.loads((root / HOLDER_FILE).read_text())["pid"] == os.getpid()
    lock.release()
    assert not (root / HOLDER_FILE).exists()


def test_a_second_sweep_of_a_running_name_is_refused_and_the_running_ones_directory_kept(tmp_path):
    store, lock = prepare_results_dir(str(tmp_path), "same")
    (store.root / "marker").write_text("the first sweep's")
    try:
        holder = subprocess.run(
            [sys.executable, "-c", "from raysweep.api import prepare_results_dir as p; p(*__import__('sys').argv[1:])",
             str(tmp_path), "same"],
            capture_output=True, text=True, timeout=120,
        )  # fmt: skip
    finally:
        lock.release()
    assert "SweepRunning" in holder.stderr and f"process {os.getpid()}" in holder.stderr, holder.stderr
    assert (store.root / "marker").read_text() == "the first sweep's"


def test_a_started_sweep_of_the_same_name_is_refused_with_its_resume_command(tmp_path):
    store = ResultStore(tmp_path, "started")
    store.write_sweep_json({"sweep": "started", "trials": []})
    with pytest.raises(UsageError, match=r"already exists in .*python -m raysweep.tune --resume .*started"):
        prepare_results_dir(str(tmp_path), "started")


def interrupted_sweep(tmp_path: Path) -> ResultStore:
    """A sweep of three planned trials, one with a completed row and one with a failed row."""
    store = ResultStore(tmp_path, "cut")
    trials = [TrialParams(micro_batch_per_worker=b) for b in (8, 16, 32)]
    store.write_sweep_json({"sweep": "cut", "trials": [t.to_dict() for t in trials], "planned_trials": 3})
    (store.root / "_tune").mkdir()
    for trial, status in zip(trials[:2], ("completed", "failed")):
        row = {"status": status, "num_workers": 1, "params_json": trial.key()}
        store.write_rows("trials", f"t{trial.micro_batch_per_worker}", [row])
    return store


def test_a_resumes_dry_run_lists_the_trials_left_and_starts_nothing(tmp_path, monkeypatch, capsys):
    interrupted_sweep(tmp_path)
    monkeypatch.chdir(tmp_path)
    plan = plan_resume("cut")
    assert [t.micro_batch_per_worker for t in plan.left] == [32]
    assert (plan.planned, plan.with_rows, plan.failed) == (3, 2, 1)
    retried = plan_resume("cut", retry_failed=True)
    assert [t.micro_batch_per_worker for t in retried.left] == [16, 32]

    code, out, err = run_main(capsys, "--resume", "cut", "--dry-run", "--retry-failed")
    assert code == 0, err
    assert "2 of 3 trials have rows (1 failed: they run again)" in out
    assert out.rstrip().endswith("2 trials left to run; dry run: nothing started.")


@pytest.mark.parametrize(
    "argv, says",
    [
        (["--space", "batch_grid", "--assume-gpus", "4"], "--assume-gpus plans for GPUs"),
        (["--resume", "cut", "--set", "epochs=1"], "--set does not apply with --resume"),
        (["--resume", "cut", "--results-dir", "elsewhere"], "--results-dir does not apply with --resume"),
        (["--space", "batch_grid", "--no-dashboard", "--dashboard-host", "0.0.0.0"], "--dashboard-host applies"),
    ],
)
def test_a_flag_that_would_do_nothing_in_its_mode_is_refused_in_one_line(capsys, argv, says):
    code, out, err = run_main(capsys, *argv)
    assert code == 2 and err.count("\n") == 1 and says in err, err


def test_the_resume_command_of_an_interrupted_sweep_reads_as_typed(tmp_path, monkeypatch):
    from raysweep.interrupt import resume_line

    monkeypatch.chdir(tmp_path)
    line = resume_line(user_path("raysweep-results/batch_grid-1"))
    assert line.endswith("continue with: python -m raysweep.tune --resume raysweep-results/batch_grid-1")
