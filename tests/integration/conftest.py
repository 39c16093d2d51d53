"""Integration fixtures: the real CLI in a real process, on a real local Ray (CPU workers over gloo)."""

from __future__ import annotations

import importlib.util
import json
import os
import re
import subprocess
import sys
import time
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import psutil
import pyarrow as pa
import pytest

from raysweep.core.store import read_table
from raysweep.runtime.cluster import OWNER_ENV

REPO = Path(__file__).resolve().parents[2]

# the pages that hold examples: the README and the user guide
PAGES = {
    page.relative_to(REPO).as_posix(): page.read_text()
    for page in [REPO / "README.md", *sorted(REPO.glob("docs/*.md"))]
}


def page_with(text: str) -> str:
    """The one page's text that holds ``text``."""
    holders = [name for name, page in PAGES.items() if text in page]
    assert len(holders) == 1 and PAGES[holders[0]].count(text) == 1, f"no single {text!r} in {', '.join(PAGES)}"
    return PAGES[holders[0]]


def example(name: str) -> str:
    """The fenced (```lang ... ```) or indented block that follows ``<!-- example:NAME -->`` on its page."""
    marker = f"<!-- example:{name} -->\n"
    after = page_with(marker).split(marker, 1)[1]
    if after.startswith("```"):
        return after.split("\n", 1)[1].split("\n```", 1)[0]
    lines = []
    for line in after.splitlines():
        if not line.startswith("    "):
            break
        lines.append(line[4:])
    return "\n".join(lines)


def pytest_collection_modifyitems(items):
    # The hook sees every collected item of the session, unit tests included: mark only this directory's.
    here = Path(__file__).resolve().parent
    for item in items:
        if here in Path(str(item.path)).resolve().parents:
            item.add_marker(pytest.mark.integration)


def user_env(repo_on_path: bool = False, **extra: str) -> dict[str, str]:
    """The environment a command runs in as a user's would: unbuffered output, and no ``RAY_ADDRESS`` (a local Ray
    of its own, not the caller's); ``repo_on_path`` puts this checkout first on ``PYTHONPATH`` for a command that
    runs from a directory outside it."""
    env = {**os.environ, "PYTHONUNBUFFERED": "1", **extra}
    env.pop("RAY_ADDRESS", None)
    if repo_on_path:
        env["PYTHONPATH"] = os.pathsep.join(p for p in (str(REPO), os.environ.get("PYTHONPATH")) if p)
    return env


def run_cli(
    *args: str, timeout: int = 600, module: str = "raysweep.tune", cwd: Path = REPO, repo_on_path: bool = False
) -> subprocess.CompletedProcess:
    """``python -m raysweep.tune ARGS`` as a user runs it, from ``cwd``; output kept for the assertion message.
    ``repo_on_path`` as in ``user_env``."""
    return subprocess.run(
        [sys.executable, "-m", module, *args],
        cwd=cwd,
        env=user_env(repo_on_path),
        capture_output=True,
        text=True,
        timeout=timeout,
    )


def explain(proc: subprocess.CompletedProcess) -> str:
    return f"exit {proc.returncode}\n--- stdout (tail)\n{proc.stdout[-6000:]}\n--- stderr (tail)\n{proc.stderr[-6000:]}"


def printed_result(proc: subprocess.CompletedProcess) -> Any:
    """What a script printed as its one ``RESULT <json>`` line, decoded."""
    (line,) = [line for line in proc.stdout.splitlines() if line.startswith("RESULT ")]
    return json.loads(line.removeprefix("RESULT "))


def table(sweep_dir: Path, name: str) -> pa.Table:
    return read_table(sweep_dir / name, name)


class Run:
    """``python -m raysweep.tune ARGS`` in a session of its own, with the processes it started while it ran."""

    def __init__(self, tmp_path: Path, *args: str, cwd: Path = REPO):
        self.log = tmp_path / f"cli-{time.monotonic_ns()}.log"
        env = user_env()
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


# The shared cluster's logical CPUs: a local Ray's for trials of up to 2 ranks (``local_num_cpus``: the largest trial
# plus one), so that its 2-rank trials run one at a time there as they do on the Ray a sweep starts.
SHARED_CPUS = 3


@pytest.fixture(scope="session")
def shared_ray() -> Iterator[str]:
    """A Ray cluster of this pytest worker's, joined with ``--address`` by the sweeps whose behaviour is not the
    local Ray a sweep starts (that is test_exit_paths', test_local_ray's, test_security's...): a join skips a Ray
    start and stop, seconds of CPU on 2 cores. Its processes are told its address, as a local
    Ray's are (``raysweep.runtime.cluster.start_local``), so Ray's State API asked from them finds it among the other
    Rays on the machine; its sweeps start no idle workers either."""
    from ray.cluster_utils import Cluster

    from raysweep.runtime.cluster import environment_set, free_port

    port = free_port()
    with environment_set("RAY_ADDRESS", f"127.0.0.1:{port}"), environment_set("RAY_prestart_worker_first_driver", "0"):
        cluster = Cluster(
            initialize_head=True,
            connect=False,
            head_node_args={"num_cpus": SHARED_CPUS, "gcs_server_port": port, "include_dashboard": False},
        )
    yield cluster.address
    cluster.shutdown()


def on_shared(address: str) -> list[str]:
    """The options that run a sweep on the shared cluster (``shared_ray``) one trial at a time, as a sweep of trials
    of up to 2 ranks runs on its own local Ray of 2 cores."""
    return ["--address", address, "--max-concurrent-trials", "1"]


# The session's sweep of 2-rank trials: batch_grid at micro batch 16 and 32 on 2 ranks over gloo, 2 epochs of 512
# samples (16 and 8 optimizer steps an epoch: each trial's last epoch has its timed steps and its profiled window),
# from the command line, logged to MLflow where it is installed. Its tests read it and write nothing into it.
TWO_RANK = {"name": "tracked", "epochs": 2, "micro_batches": (16, 32), "train_samples": 512}


@pytest.fixture(scope="session")
def two_rank_sweep(tmp_path_factory) -> tuple[Path, list[str], bool]:
    """The sweep's directory, its terminal (stdout and stderr in the order a user sees them), and whether it
    logged to MLflow."""
    cwd = tmp_path_factory.mktemp("two-rank")
    env = user_env()
    env.pop("MLFLOW_TRACKING_URI", None)  # MLflow's default store, in the sweep
    mlflow = importlib.util.find_spec("mlflow") is not None
    argv = [
        sys.executable, "-m", "raysweep.tune", "--space", "batch_grid", "--results-dir", "results",
        "--name", TWO_RANK["name"], "--epochs", str(TWO_RANK["epochs"]), "--set", "num_workers=2", "--repeats", "1",
        "--set", f"micro_batch_per_worker={list(TWO_RANK['micro_batches'])}",
        "--set", f"train_samples={TWO_RANK['train_samples']}", "--no-dashboard",
        *(["--log-to", "mlflow"] if mlflow else []),
    ]  # fmt: skip
    proc = subprocess.run(
        argv, cwd=cwd, env=env, stdout=subprocess.PIPE, stderr=subprocess.STDOUT, text=True, timeout=900
    )
    assert proc.returncode == 0, proc.stdout[-8000:]
    assert sorted(p.name for p in cwd.iterdir()) == ["results"]  # nothing beside the results (no ./mlruns)
    return cwd / "results" / TWO_RANK["name"], proc.stdout.splitlines(), mlflow


# What the session's Python API sweep hands its tests, printed by the lines run after the example.
REPORT_BACK = """
import json
print("RESULT " + json.dumps({
    "path": str(result.path),
    "report": str(result.report) if result.report else None,
    "loaded": again.trials.to_pylist(),
    "epochs": result.epochs.num_rows,
    "ranks": result.ranks.num_rows,
    "economy": json.loads((result.path / "sweep.json").read_text())["economy"],
}, default=str))
"""


@pytest.fixture(scope="session")
def python_api_sweep(tmp_path_factory) -> dict:
    """The user guide's Python API example (``run_sweep`` of the embedded default: 2 trials of 2 CPU ranks), run
    as printed from a script in a fresh directory (it writes ./raysweep-results), then lines that print what it
    returned; its tests read the sweep and write nothing into it. The result's ``path`` and ``report`` are
    absolute, ``work`` is the directory it ran in, ``proc`` the script's process with its terminal."""
    work = tmp_path_factory.mktemp("python-api")
    proc = subprocess.run(
        [sys.executable, "-c", example("python-api") + "\n" + REPORT_BACK],
        cwd=work,
        env=user_env(repo_on_path=True),
        capture_output=True,
        text=True,
        timeout=900,
    )
    assert proc.returncode == 0, explain(proc)
    result = printed_result(proc)
    # the example's results_dir is relative: its paths are the working directory's
    report = result["report"] and work / result["report"]
    return {**result, "work": work, "path": work / result["path"], "report": report, "proc": proc}
