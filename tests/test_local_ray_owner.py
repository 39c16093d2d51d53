"""Which processes belong to which driver's local Ray (``raysweep.runtime.cluster``), with real processes
and no Ray: a process marked with a dead driver is ended with everything under it, a live driver's never."""

from __future__ import annotations

import os
import subprocess
import sys
import time

import psutil
import pytest

from raysweep.core.errors import UsageError
from raysweep.runtime import cluster

# A process that starts a child (as the raylet starts workers), then waits.
PARENT = (
    "import subprocess, sys, time; "
    "subprocess.Popen([sys.executable, '-c', 'import time; time.sleep(60)']); time.sleep(60)"
)


def marked(mark: str) -> subprocess.Popen:
    return subprocess.Popen([sys.executable, "-c", PARENT], env={**os.environ, cluster.OWNER_ENV: mark})


def test_a_mark_names_a_live_process_until_it_ends_or_its_pid_is_reused():
    mine = cluster.owner_mark(os.getpid())
    assert cluster.alive(mine)
    pid, _, started = mine.partition(":")
    assert not cluster.alive(f"{pid}:{float(started) - 5:.2f}")  # the same pid, an earlier process
    assert not cluster.alive("not-a-pid:0")


def test_the_orphans_of_a_dead_driver_are_ended_and_a_live_drivers_processes_kept():
    gone = subprocess.Popen([sys.executable, "-c", "pass"])
    gone.wait()
    dead_mark = f"{gone.pid}:0.00"  # a driver that no longer runs
    orphan, kept = marked(dead_mark), marked(cluster.owner_mark(os.getpid()))
    try:
        for proc in (orphan, kept):  # each has started its child
            while not psutil.Process(proc.pid).children():
                time.sleep(0.05)
        orphan_tree = [psutil.Process(orphan.pid), *psutil.Process(orphan.pid).children()]
        kept_tree = [psutil.Process(kept.pid), *psutil.Process(kept.pid).children()]
        found = {p.pid for p in cluster.local_ray_processes(lambda mark: mark == dead_mark)}
        assert found == {p.pid for p in orphan_tree}
        cluster.stop_orphaned_local_ray()
        orphan.wait(timeout=10)
        assert not any(p.is_running() and p.status() != psutil.STATUS_ZOMBIE for p in orphan_tree)
        assert all(p.is_running() for p in kept_tree)
    finally:
        for proc in psutil.Process(kept.pid).children() + [psutil.Process(kept.pid)]:
            proc.kill()
        kept.wait()


def test_joining_an_unauthenticated_cluster_warns_naming_the_risk_and_the_remedy():
    line = cluster.unauthenticated_warning("head:6379")
    assert line.startswith("raysweep: warning: the Ray cluster at head:6379 runs without token authentication")
    assert "anyone who can reach its ports can run code on it" in line and "RAY_AUTH_MODE=token" in line
    assert "\n" not in line


def test_a_ray_without_its_dashboard_packages_is_one_line_before_ray_starts(monkeypatch):
    monkeypatch.setitem(sys.modules, "ray.dashboard.optional_deps", None)  # what an install of plain `ray` lacks
    with pytest.raises(UsageError, match=r"pip install 'ray\[default\]', or pass --no-dashboard"):
        cluster.start_local(num_cpus=1)
