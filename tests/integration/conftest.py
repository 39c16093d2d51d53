"""Integration fixtures: the real CLI in a real process, on a real local Ray (CPU workers over gloo)."""

from __future__ import annotations

import os
import re
import subprocess
import sys
import time
from pathlib import Path

import psutil
import pyarrow as pa
import pytest

from raysweep.core.store import read_table
from raysweep.runtime.cluster import OWNER_ENV

REPO = Path(__file__).resolve().parents[2]


def pytest_collection_modifyitems(items):
    # The hook sees every collected item of the session, unit tests included: mark only this directory's.
    here = Path(__file__).resolve().parent
    for item in items:
        if here in Path(str(item.path)).resolve().parents:
            item.add_marker(pytest.mark.integration)


def run_cli(
    *args: str, timeout: int = 600, module: str = "raysweep.tune", cwd: Path = REPO
) -> subprocess.CompletedProcess:
    """``python -m raysweep.tune ARGS`` as a user runs it, from ``cwd``; output kept for the assertion message."""
    env = {**os.environ, "PYTHONUNBUFFERED": "1"}
    env.pop("RAY_ADDRESS", None)
    return subprocess.run(
        [sys.executable, "-m", module, *args],
        cwd=cwd,
        env=env,
        capture_output=True,
        text=True,
        timeout=timeout,
    )


def explain(proc: subprocess.CompletedProcess) -> str:
    return f"exit {proc.returncode}\n--- stdout (tail)\n{proc.stdout[-6000:]}\n--- stderr (tail)\n{proc.stderr[-6000:]}"


def table(sweep_dir: Path, name: str) -> pa.Table:
    return read_table(sweep_dir / name, name)


class Run:
    """``python -m raysweep.tune ARGS`` in a session of its own, with the processes it started while it ran."""

    def __init__(self, tmp_path: Path, *args: str, cwd: Path = REPO):
        self.log = tmp_path / f"cli-{time.monotonic_ns()}.log"
        env = {**os.environ, "PYTHONUNBUFFERED": "1"}
        env.pop("RAY_ADDRESS", None)
        with open(self.log, "w") as out:
            self.proc = subprocess.Popen(
                [sys.executable, "-m", "raysweep.tune", *args],
                cwd=cwd,
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
