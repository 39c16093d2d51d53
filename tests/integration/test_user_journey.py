"""A new user's path, typed in a shell in a directory of their own: relative paths and the defaults, and every
command raysweep prints (the resume command after Ctrl-C, the query hint, the report's path) run exactly as
printed, from that directory.
"""

from __future__ import annotations

import json
import os
import re
import shlex
import signal
import subprocess
import sys
from pathlib import Path

from tests.integration.conftest import Run, explain, run_cli, table, user_env

# The embedded default, shrunk: two points of one epoch pair on a handful of relative 3-channel arrays.
SMALL = ["--epochs", "2", "--repeats", "1", "--set", "micro_batch_per_worker=[8,16]", "--set", "warmup_steps=0"]


def printed(pattern: str, output: str) -> str:
    found = re.findall(pattern, output, flags=re.MULTILINE)
    assert found, f"nothing printed matches {pattern!r}\n{output[-4000:]}"
    return found[-1]


def run_printed(command: str, cwd: Path, timeout: int = 600) -> subprocess.CompletedProcess:
    """A command line raysweep printed, run as a user pastes it into a shell (``python`` is this interpreter)."""
    argv = shlex.split(command)
    assert argv[0] == "python", command
    return subprocess.run(
        [sys.executable, *argv[1:]], cwd=cwd, env=user_env(), capture_output=True, text=True, timeout=timeout
    )


def test_relative_data_ctrl_c_then_every_printed_command_runs_as_printed(tmp_path: Path):
    home = tmp_path / "me"
    home.mkdir()
    arrays = ["arr", "--channels", "3", "--dtype", "uint8", "--size", "12", "--per-class", "16"]
    made = run_cli(*arrays, module="trainers.make_arrays", cwd=home)
    assert made.returncode == 0, explain(made)

    run = Run(tmp_path, "--space", "batch_grid", "--dataset", "arrays", "--data-dir", "arr", *SMALL, cwd=home)
    run.wait_for(r"epoch 1/2")
    os.killpg(run.proc.pid, signal.SIGINT)  # a terminal's Ctrl-C reaches the whole foreground group
    assert run.wait() == 130, run.output()
    out = run.output()
    assert "sweep finished" not in out, out
    resume = printed(r"continue with: (.+)$", out)
    assert resume.startswith("python -m raysweep.tune --resume raysweep-results/batch_grid-"), resume
    sweep_dir = home / shlex.split(resume)[-1]

    dry = run_printed(f"{resume} --dry-run", home)
    assert dry.returncode == 0, explain(dry)
    assert "trials left to run; dry run: nothing started." in dry.stdout, explain(dry)
    assert "Ray's logs" not in dry.stdout + dry.stderr, explain(dry)

    resumed = run_printed(resume, home, timeout=900)
    assert resumed.returncode == 0, explain(resumed)
    rows = table(sweep_dir, "trials").to_pylist()
    assert sorted(r["micro_batch_per_worker"] for r in rows) == [8, 16], explain(resumed)
    assert all(r["status"] == "completed" for r in rows), rows
    ran_on = {json.loads(r["params_json"])["data_dir"] for r in rows}
    assert ran_on == {str(home / "arr")}, "the relative data dir reached the ranks unresolved"

    query = run_printed(printed(r"^  query: (.+)$", resumed.stdout), home)
    assert query.returncode == 0, explain(query)
    assert all(r["trial_id"] in query.stdout for r in rows), explain(query)

    report = Path(home, printed(r"^report: (\S+\.md)$", resumed.stdout))
    assert report.is_file() and report.read_text().startswith("#"), resumed.stdout


def test_flags_that_would_do_nothing_are_refused_in_one_line(tmp_path: Path):
    proc = run_cli("--space", "batch_grid", "--assume-gpus", "4", cwd=tmp_path, timeout=120)
    assert proc.returncode == 2, explain(proc)
    assert proc.stderr.count("\n") == 1 and "--assume-gpus" in proc.stderr and "--dry-run" in proc.stderr
    assert not (tmp_path / "raysweep-results").exists()
