"""A driver joining a real cluster of another Ray version exits 2 with one line naming both versions.

It needs a second Ray installation: ``RAYSWEEP_OTHER_RAY`` names the Python of an environment with another Ray
version (e.g. a venv with ``pip install ray==2.60.0`` beside this one's); without it the test is skipped, and
the mapping of Ray's message is pinned by ``tests/test_ray_version_mismatch.py``.
"""

from __future__ import annotations

import os
import shutil
import subprocess
import tempfile
from pathlib import Path

import psutil
import pytest
import ray

from raysweep.runtime.cluster import end, free_port
from tests.integration.conftest import explain, run_cli

OTHER_PYTHON = os.environ.get("RAYSWEEP_OTHER_RAY")


@pytest.fixture
def other_ray_head():
    """A one-node cluster of the other Ray version on loopback: (address, its Ray version); its processes end after."""
    if not OTHER_PYTHON:
        pytest.skip("RAYSWEEP_OTHER_RAY (the Python of an environment with another Ray version) is not set")
    version = subprocess.run(
        [OTHER_PYTHON, "-c", "import ray; print(ray.__version__)"], capture_output=True, text=True, check=True
    ).stdout.strip()
    assert version != ray.__version__, f"RAYSWEEP_OTHER_RAY has this driver's Ray {version}"
    temp_dir = tempfile.mkdtemp(prefix="rs-other-ray-", dir="/tmp")  # short: Ray's socket paths live under it
    address = f"127.0.0.1:{free_port()}"
    ray_cli = Path(OTHER_PYTHON).parent / "ray"
    env = {**os.environ, "RAY_AUTH_MODE": "disabled"}
    env.pop("RAY_ADDRESS", None)
    start = [str(ray_cli), "start", "--head", f"--port={address.split(':')[1]}", "--num-cpus=1"]
    start += ["--include-dashboard=false", "--node-ip-address=127.0.0.1", f"--temp-dir={temp_dir}"]
    try:
        subprocess.run(start, env=env, capture_output=True, text=True, check=True, timeout=180)
        yield address, version
    finally:
        started = []
        for proc in psutil.process_iter():
            try:
                if temp_dir in " ".join(proc.cmdline()):
                    started += [proc, *proc.children(recursive=True)]
            except psutil.Error:
                continue
        end(started)
        shutil.rmtree(temp_dir, ignore_errors=True)


def test_a_cluster_of_another_ray_version_exits_2_with_one_line_naming_both(other_ray_head, tmp_path, monkeypatch):
    address, version = other_ray_head
    monkeypatch.delenv("RAY_AUTH_MODE", raising=False)  # the cluster runs without token authentication
    proc = run_cli("--space", "batch_grid", "--address", address, "--results-dir", "r", cwd=tmp_path, timeout=180)
    assert proc.returncode == 2, explain(proc)
    (line,) = proc.stderr.strip().splitlines()
    assert line == (
        f"raysweep: error: the cluster at {address} runs Ray {version}; this driver has Ray {ray.__version__}: "
        f"install ray=={version} here"
    ), explain(proc)
    assert not (tmp_path / "r").exists()
