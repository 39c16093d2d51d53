"""Faults with real processes and real signals: a killed driver, a killed worker, OOM, a hang, a killed writer."""

from __future__ import annotations

import os
import re
import signal
import subprocess
import sys
import time

import pyarrow.parquet as pq

from tests.integration.conftest import REPO, Run, explain, on_shared, run_cli, table

# No dashboard: none of these is about it, and it costs each local Ray several CPU-seconds to start
# (the resume after the driver's kill starts with it, as a user's does).
SMALL = ["--set", "train_samples=64", "--set", "warmup_steps=0", "--no-report", "--no-dashboard"]


def test_driver_killed_mid_sweep_resumes_with_one_row_per_trial(tmp_path):
    """SIGKILL the CLI after one of three trials; --resume runs the rest and keeps the finished rows as they were."""
    args = [
        "--space",
        "batch_grid",
        "--repeats",
        "1",
        "--results-dir",
        str(tmp_path),
        "--name",
        "killed",
        "--epochs",
        "1",
        "--set",
        "micro_batch_per_worker=[8,16,32]",
        *SMALL,
    ]
    proc = subprocess.Popen(
        [sys.executable, "-m", "raysweep.tune", *args],
        cwd=REPO,
        start_new_session=True,
        stdout=subprocess.DEVNULL,
        stderr=subprocess.DEVNULL,
    )
    trials_dir = tmp_path / "killed" / "trials"
    deadline = time.time() + 600
    while not list(trials_dir.glob("*.parquet")):
        assert proc.poll() is None, "the sweep ended before it could be killed"
        assert time.time() < deadline, "no trial finished in time"
        time.sleep(0.5)
    os.kill(proc.pid, signal.SIGKILL)
    proc.wait()
    before = {r["trial_id"]: r for r in table(tmp_path / "killed", "trials").to_pylist()}
    assert 1 <= len(before) < 3, before  # trials run one at a time: the kill leaves some to resume

    resumed = run_cli("--resume", str(tmp_path / "killed"), "--no-report", timeout=900)
    assert resumed.returncode == 0, explain(resumed)
    rows = table(tmp_path / "killed", "trials").to_pylist()
    assert len(rows) == 3 and len({r["trial_id"] for r in rows}) == 3
    assert sorted(r["micro_batch_per_worker"] for r in rows) == [8, 16, 32]
    assert all(r["status"] == "completed" for r in rows)
    after = {r["trial_id"]: r for r in rows}
    for trial_id, row in before.items():
        assert after[trial_id]["finished_at"] == row["finished_at"], "a finished trial was run again"


def test_killed_worker_resumes_its_trial_from_the_last_checkpoint(tmp_path, shared_ray):
    """Rank 1 SIGKILLs itself in epoch 2 of 3; the new group loads the last checkpoint, not epoch 0."""
    # 64 samples / (8 x 2 ranks) = 4 steps per epoch: step 9 is in the third epoch
    proc = run_cli(
        "--space",
        "batch_grid",
        "--repeats",
        "1",
        "--results-dir",
        str(tmp_path),
        "--name",
        "worker",
        "--epochs",
        "3",
        "--set",
        "num_workers=2",
        "--set",
        "micro_batch_per_worker=[8]",
        "--set",
        "inject_fault=exit@1:9",
        "--max-failures",
        "1",
        *SMALL,
        *on_shared(shared_ray),
        timeout=900,
    )
    assert proc.returncode == 0, explain(proc)
    # the newest checkpoint Ray Train had registered when the rank died: epoch 1's, or epoch 0's if
    # rank 1 died before the controller had recorded the later one
    assert re.search(r"resumed from checkpoint after epoch [01]", proc.stdout + proc.stderr), explain(proc)
    (row,) = table(tmp_path / "worker", "trials").to_pylist()
    assert row["status"] == "completed" and row["retries"] == 1
    assert [e["epoch"] for e in table(tmp_path / "worker", "epochs").to_pylist()] == [0, 1, 2]


def test_out_of_memory_is_recorded_not_retried_and_the_sweep_goes_on(tmp_path, shared_ray):
    space = tmp_path / "oom.yaml"
    space.write_text(
        "axes:\n"
        "  - {inject_fault: ['oom@0:1']}\n"
        "  - {inject_fault: ['']}\n"
        "fixed: {epochs: 1, train_samples: 64, micro_batch_per_worker: 8, warmup_steps: 0}\n"
    )
    proc = run_cli(
        "--space",
        str(space),
        "--results-dir",
        str(tmp_path),
        "--name",
        "oom",
        "--max-failures",
        "2",
        *on_shared(shared_ray),
        "--no-report",
        "--no-dashboard",
        timeout=900,
    )
    assert proc.returncode == 1, explain(proc)  # not every trial completed
    rows = {r["status"]: r for r in table(tmp_path / "oom", "trials").to_pylist()}
    assert set(rows) == {"oom", "completed"}
    oom = rows["oom"]
    assert "OutOfMemoryError" in oom["error"] and oom["retries"] == 0
    assert oom["peak_mem_gib"] > 0 and oom["micro_batch_per_worker"] == 8 and oom["params_json"]


def test_a_silent_rank_fails_the_trial_at_the_collective_timeout_and_leaves_nothing_running(tmp_path):
    """Rank 1 goes silent; rank 0's next collective times out, the trial fails, the CLI exits 1, and none of
    the processes it started, the silent rank's included, outlives it (the failed-trial way out of
    ``test_exit_paths``)."""
    started = time.time()
    run = Run(
        tmp_path,
        "--space",
        "batch_grid",
        "--repeats",
        "1",
        "--results-dir",
        str(tmp_path),
        "--name",
        "hang",
        "--epochs",
        "1",
        "--set",
        "num_workers=2",
        "--set",
        "micro_batch_per_worker=[8]",
        "--set",
        "inject_fault=hang@1:2",
        "--collective-timeout",
        "15",
        *SMALL,
    )
    assert run.wait(timeout=600) == 1, run.output()
    (row,) = table(tmp_path / "hang", "trials").to_pylist()
    assert row["status"] == "failed" and row["error"]
    assert time.time() - started < 300, "the hang was not cut short by the collective timeout"
    assert len(run.started) > 3, "the local Ray's processes were not seen"
    assert run.left_running() == [], run.output()


WRITER = """
import sys, pyarrow as pa
from pathlib import Path
from raysweep.core.store import atomic_write_table
rows = pa.table({"x": list(range(200_000))})
i = 0
while True:
    atomic_write_table(Path(sys.argv[1]) / f"{i % 3}.parquet", rows)
    i += 1
"""


def test_a_writer_killed_at_any_moment_leaves_every_table_readable(tmp_path):
    for delay in (0.05, 0.2, 0.4, 0.7, 1.1):
        writer = subprocess.Popen([sys.executable, "-c", WRITER, str(tmp_path)], cwd=REPO)
        time.sleep(1.0 + delay)
        writer.send_signal(signal.SIGKILL)
        writer.wait()
        for file in tmp_path.glob("*.parquet"):
            assert pq.read_table(file).num_rows == 200_000
    assert list(tmp_path.glob("*.parquet")), "the writer never finished a file"
