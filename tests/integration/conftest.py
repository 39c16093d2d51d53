"""Integration fixtures: the real CLI in a real process, on a real local Ray (CPU workers over gloo)."""

from __future__ import annotations

import os
import subprocess
import sys
from pathlib import Path

import pyarrow as pa
import pytest

from raysweep.core.store import read_table

REPO = Path(__file__).resolve().parents[2]


def pytest_collection_modifyitems(items):
    # The hook sees every collected item of the session, unit tests included: mark only this directory's.
    here = Path(__file__).resolve().parent
    for item in items:
        if here in Path(str(item.path)).resolve().parents:
            item.add_marker(pytest.mark.integration)


def run_cli(*args: str, timeout: int = 600, module: str = "raysweep.tune") -> subprocess.CompletedProcess:
    """``python -m raysweep.tune ARGS`` as a user runs it; output kept for the assertion message."""
    env = {**os.environ, "PYTHONUNBUFFERED": "1"}
    env.pop("RAY_ADDRESS", None)
    return subprocess.run(
        [sys.executable, "-m", module, *args],
        cwd=REPO,
        env=env,
        capture_output=True,
        text=True,
        timeout=timeout,
    )


def explain(proc: subprocess.CompletedProcess) -> str:
    return f"exit {proc.returncode}\n--- stdout (tail)\n{proc.stdout[-6000:]}\n--- stderr (tail)\n{proc.stderr[-6000:]}"


def table(sweep_dir: Path, name: str) -> pa.Table:
    return read_table(sweep_dir / name, name)
