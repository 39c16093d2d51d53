"""The CLI as a user runs it: bad input fails with one line and leaves nothing behind.

A dead cluster address and an oversized local trial fail at once, before Ray starts; a model that
planning refuses fails on the started cluster, which then stops.

The subprocess timeout (20 s) is a hang guard, not a timing assertion: before these checks the
first command retried Ray's GCS for more than five minutes and the second started a 4,097-CPU
local Ray that never ran a step.
"""

from __future__ import annotations

import socket

from tests.integration.conftest import explain, run_cli


def closed_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


def test_an_address_nothing_listens_on_exits_2_with_one_line(tmp_path):
    address = f"127.0.0.1:{closed_port()}"
    proc = run_cli("--space", "batch_grid", "--address", address, "--results-dir", str(tmp_path / "r"), timeout=20)
    assert proc.returncode == 2, explain(proc)
    (line,) = proc.stderr.strip().splitlines()
    assert line.startswith(f"raysweep: error: Ray cluster {address}: nothing answers"), line
    assert not (tmp_path / "r").exists()


def test_num_workers_4096_on_this_machine_exits_2_with_one_line_and_starts_no_ray(tmp_path):
    proc = run_cli("--space", "batch_grid", "--set", "num_workers=4096", "--results-dir", str(tmp_path), timeout=20)
    assert proc.returncode == 2, explain(proc)
    (line,) = proc.stderr.strip().splitlines()
    assert "num_workers=4096 x cpus_per_worker=1 is more than this machine can run" in line, line
    assert "Ray dashboard" not in proc.stdout and not list(tmp_path.iterdir())


def test_a_model_planning_refuses_on_the_started_cluster_is_one_line_and_leaves_no_directory(tmp_path):
    # Planning's other refusals (dataset, data files, cluster size) take the same path: their messages
    # are pinned by dry runs in tests/test_cli.py
    results = tmp_path / "r"
    proc = run_cli("--space", "batch_grid", "--model", "vit_nope_xyz", "--no-dashboard", "--results-dir", str(results))
    assert proc.returncode == 2, explain(proc)
    lines = proc.stderr.strip().splitlines()
    assert len(lines) == 1, explain(proc)
    assert lines[0].startswith("raysweep: error: model='vit_nope_xyz' is neither a raysweep preset"), lines
    assert not results.exists()
