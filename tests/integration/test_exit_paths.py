"""Every way out of the CLI leaves no process it started: success, a refusal, a failed trial, Ctrl-C, SIGTERM.
The failed trial's way out is pinned on the sweep whose rank goes silent until the collective timeout fails
its trial (``test_reliability``), the harder case of a failed trial: one rank is still running when it fails.

The processes a run started are its process tree and the processes of its local Ray (marked in their
environment with the run's pid, ``raysweep.runtime.cluster.OWNER_ENV``), sampled while it runs; after
it exits, none of them may be alive.  Ctrl-C and SIGTERM exit 130 and 143 within 30 s, print
raysweep's resume command, and ``--resume`` then finishes the sweep with every trial's row once.
"""

from __future__ import annotations

import os
import signal
import subprocess
import sys
import time
from pathlib import Path

import psutil

from tests.integration.conftest import REPO, Run, table

SMALL = ["--set", "train_samples=64", "--set", "warmup_steps=0", "--repeats", "1", "--no-report", "--no-dashboard"]


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


def stop(run: Run, signum: signal.Signals) -> str:
    """Stop ``run`` in a trial's first epoch with ``signum`` as a user's terminal or a batch system does;
    it exits with 128 + the signal's number within 30 s, prints its resume command and leaves nothing running."""
    run.wait_for(r"epoch 1/2")
    if signum == signal.SIGINT:
        os.killpg(run.proc.pid, signum)  # as a terminal's Ctrl-C reaches its whole foreground group
    else:
        os.kill(run.proc.pid, signum)  # as Kubernetes or a batch system stops the main process
    stopped = time.time()
    assert run.wait() == 128 + signum, run.output()
    assert time.time() - stopped < 30, run.output()
    out = run.output()
    assert "Tuner.restore" not in out and "SIGTERM received" not in out, out
    assert run.left_running() == [], out
    return out


def test_a_stopped_sweep_exits_clean_and_resumes_with_each_row_once(tmp_path):
    """Stopped by Ctrl-C (SIGINT, 130) in its first trial's epochs, resumed, that resume stopped by SIGTERM (143)
    in a later trial's (a trial the first run never started, so it has an epoch 1 to stop in); a last --resume
    (the success path) runs the rest, each trial once."""
    sweep = tmp_path / "stopped"
    out = stop(
        Run(tmp_path, *sweep_args(tmp_path, "stopped", "--set", "micro_batch_per_worker=[8,16,32]")), signal.SIGINT
    )
    assert f"python -m raysweep.tune --resume {sweep}" in out, out
    out = stop(Run(tmp_path, "--resume", str(sweep), "--no-report", "--no-dashboard"), signal.SIGTERM)
    assert f"python -m raysweep.tune --resume {sweep}" in out, out

    before = {r["trial_id"]: r["finished_at"] for r in table(sweep, "trials").to_pylist()}
    resumed = Run(tmp_path, "--resume", str(sweep), "--no-report", "--no-dashboard")
    assert resumed.wait() == 0, resumed.output()
    rows = table(sweep, "trials").to_pylist()
    assert sorted(r["micro_batch_per_worker"] for r in rows) == [8, 16, 32], resumed.output()
    assert all(r["status"] == "completed" for r in rows)
    assert all(r["finished_at"] == before[r["trial_id"]] for r in rows if r["trial_id"] in before)
    # the trials resumed from their checkpoints time their setup in the run that finished them
    assert all(r["setup_s"] >= 0 for r in rows), [(r["trial_id"], r["setup_s"]) for r in rows]
    assert resumed.left_running() == [], resumed.output()


# A driver that starts a local Ray as a sweep does and holds it.
HOLD = """
import time
from raysweep.runtime.cluster import start_local
start_local(1, dashboard=False)
print("up", flush=True)
time.sleep(900)
"""


def test_a_killed_drivers_local_ray_is_ended_by_the_next_run_and_a_live_ones_is_kept(tmp_path):
    """Two sweeps' local Rays; one driver killed with SIGKILL: a new run's start ends that one's processes only."""
    drivers = []
    try:
        for _ in range(2):  # one after the other: two Rays starting at once overload a 2-core machine
            drivers.append(subprocess.Popen([sys.executable, "-c", HOLD], cwd=REPO, stdout=subprocess.PIPE, text=True))
            assert drivers[-1].stdout.readline().strip() == "up"
        killed, live = ([psutil.Process(d.pid), *psutil.Process(d.pid).children(recursive=True)] for d in drivers)
        assert len(killed) > 3 and len(live) > 3
        drivers[0].kill()
        drivers[0].wait()
        subprocess.run(
            [sys.executable, "-c", "from raysweep.runtime.cluster import stop_orphaned_local_ray as s; s()"],
            cwd=REPO,
            check=True,
            timeout=120,
        )
        assert [p.pid for p in killed if p.is_running() and p.status() != psutil.STATUS_ZOMBIE] == []
        assert all(p.is_running() for p in live)
    finally:
        for driver in drivers:
            driver.kill()
            driver.wait()
        subprocess.run(
            [sys.executable, "-c", "from raysweep.runtime.cluster import stop_orphaned_local_ray as s; s()"],
            cwd=REPO,
            timeout=120,
        )
