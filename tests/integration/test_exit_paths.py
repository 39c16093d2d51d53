"""Every way out of the CLI leaves no process it started: success, a refusal, a failed trial, Ctrl-C, SIGTERM.

The processes a run started are its process tree and the processes of its local Ray (marked in their
environment with the run's pid, ``raysweep.runtime.cluster.OWNER_ENV``), sampled while it runs; after
it exits, none of them may be alive.  Ctrl-C and SIGTERM exit 130 and 143 within 30 s, print
raysweep's resume command, and ``--resume`` then finishes the sweep with every trial's row once.
"""

from __future__ import annotations

import os
import re
import signal
import subprocess
import sys
import time
from pathlib import Path

import psutil
import pytest

from raysweep.runtime.cluster import OWNER_ENV
from tests.integration.conftest import REPO, table

SMALL = ["--set", "train_samples=64", "--set", "warmup_steps=0", "--no-report", "--no-dashboard"]


class Run:
    """``python -m raysweep.tune ARGS`` in a session of its own, with the processes it started while it ran."""

    def __init__(self, tmp_path: Path, *args: str):
        self.log = tmp_path / f"cli-{time.monotonic_ns()}.log"
        env = {**os.environ, "PYTHONUNBUFFERED": "1"}
        env.pop("RAY_ADDRESS", None)
        with open(self.log, "w") as out:
            self.proc = subprocess.Popen(
                [sys.executable, "-m", "raysweep.tune", *args],
                cwd=REPO,
                env=env,
                stdout=out,
                stderr=subprocess.STDOUT,
                start_new_session=True,
            )
        self.started: dict[int, float] = {}  # pid: create time

    def output(self) -> str:
        return self.log.read_text()

    def sample(self) -> None:
        try:
            found = [psutil.Process(self.proc.pid), *psutil.Process(self.proc.pid).children(recursive=True)]
        except psutil.Error:
            found = []
        prefix = f"{self.proc.pid}:"
        for p in psutil.process_iter():
            try:
                if p.environ().get(OWNER_ENV, "").startswith(prefix):
                    found.append(p)
            except psutil.Error:
                continue
        for p in found:
            try:
                self.started.setdefault(p.pid, p.create_time())
            except psutil.Error:
                pass

    def wait_for(self, pattern: str, timeout: float = 600) -> None:
        deadline = time.time() + timeout
        while not re.search(pattern, self.output()):
            assert self.proc.poll() is None, f"exited {self.proc.returncode} before {pattern!r}\n{self.output()}"
            assert time.time() < deadline, f"no {pattern!r} in time\n{self.output()}"
            self.sample()
            time.sleep(0.5)

    def wait(self, timeout: float = 900) -> int:
        deadline = time.time() + timeout
        while self.proc.poll() is None:
            assert time.time() < deadline, self.output()
            self.sample()
            time.sleep(0.5)
        return self.proc.returncode

    def left_running(self) -> list[str]:
        """The processes it started that are still alive a moment after it exited."""
        time.sleep(2)
        alive = []
        for pid, created in self.started.items():
            try:
                p = psutil.Process(pid)
                if p.create_time() == created and p.status() != psutil.STATUS_ZOMBIE:
                    alive.append(f"{pid} {' '.join(p.cmdline())[:120]}")
            except psutil.Error:
                continue
        return alive


def sweep_args(tmp_path: Path, name: str, *more: str) -> list[str]:
    return ["--space", "batch_grid", "--results-dir", str(tmp_path), "--name", name, "--epochs", "2", *SMALL, *more]


def test_a_refused_sweep_leaves_nothing_running(tmp_path):
    """Refused on the started cluster (an unknown model), while its first group's workers start."""
    run = Run(
        tmp_path, *sweep_args(tmp_path, "refused", "--model", "no_such_vit", "--set", "micro_batch_per_worker=[8]")
    )
    assert run.wait() == 2, run.output()
    assert "no_such_vit" in run.output()
    assert len(run.started) > 3, "the local Ray's processes were not seen"
    assert run.left_running() == [], run.output()


def test_a_failed_trial_leaves_nothing_running(tmp_path):
    run = Run(
        tmp_path,
        *sweep_args(tmp_path, "failed", "--set", "micro_batch_per_worker=[8]", "--set", "inject_fault=raise@0:1"),
    )
    assert run.wait() == 1, run.output()
    (row,) = table(tmp_path / "failed", "trials").to_pylist()
    assert row["status"] == "failed"
    assert run.left_running() == [], run.output()


@pytest.mark.parametrize("signum, status", [(signal.SIGINT, 130), (signal.SIGTERM, 143)])
def test_a_stopped_sweep_exits_clean_and_resumes_with_each_row_once(tmp_path, signum, status):
    """Stopped in its first trial's epochs; --resume (the success path) runs the rest, each trial once."""
    name = signum.name.lower()
    run = Run(tmp_path, *sweep_args(tmp_path, name, "--set", "micro_batch_per_worker=[8,16]"))
    run.wait_for(r"epoch 1/2")
    if signum == signal.SIGINT:
        os.killpg(run.proc.pid, signum)  # as a terminal's Ctrl-C reaches its whole foreground group
    else:
        os.kill(run.proc.pid, signum)  # as Kubernetes or a batch system stops the main process
    stopped = time.time()
    assert run.wait() == status, run.output()
    assert time.time() - stopped < 30, run.output()
    out = run.output()
    assert f"python -m raysweep.tune --resume {tmp_path / name}" in out, out
    assert "Tuner.restore" not in out and "SIGTERM received" not in out, out
    assert run.left_running() == [], out

    before = {r["trial_id"]: r["finished_at"] for r in table(tmp_path / name, "trials").to_pylist()}
    resumed = Run(tmp_path, "--resume", str(tmp_path / name), "--no-report", "--no-dashboard")
    assert resumed.wait() == 0, resumed.output()
    rows = table(tmp_path / name, "trials").to_pylist()
    assert sorted(r["micro_batch_per_worker"] for r in rows) == [8, 16], resumed.output()
    assert all(r["status"] == "completed" for r in rows)
    assert all(r["finished_at"] == before[r["trial_id"]] for r in rows if r["trial_id"] in before)
    assert resumed.left_running() == [], resumed.output()
