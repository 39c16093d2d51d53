"""Ctrl-C and SIGTERM in the CLI's process (``raysweep.interrupt``), without Ray: the exit status, the one
resume line, Tune asked to stop while it runs, a second Ctrl-C at once."""

from __future__ import annotations

import signal
import subprocess
import sys
from pathlib import Path

REPO = Path(__file__).resolve().parents[1]

# A stand-in for the CLI: the handlers installed, a sweep directory, Tune's stop request (its SIGUSR1
# handler) recorded, and a "fit" that ends when Tune has been asked to stop.
SCRIPT = """
import os, signal, sys, time
import raysweep.interrupt as interrupt

handling = interrupt.handled()  # as main() holds it while the command runs
handling.__enter__()
interrupt.resumable("/results/sweep")
asked = []
signal.signal(signal.SIGUSR1, lambda s, f: asked.append(s))
phase = sys.argv[1]
if phase == "fit":
    interrupt.fitting(True)
    os.kill(os.getpid(), getattr(signal, sys.argv[2]))
    print("tune asked to stop:", bool(asked), flush=True)
    if len(sys.argv) > 3:
        os.kill(os.getpid(), signal.SIGINT)  # a second Ctrl-C before Tune returns
    interrupt.fitting(False)
else:
    os.kill(os.getpid(), getattr(signal, sys.argv[2]))
time.sleep(30)
print("not stopped", flush=True)
"""


def run(*args: str) -> subprocess.CompletedProcess:
    return subprocess.run([sys.executable, "-c", SCRIPT, *args], cwd=REPO, capture_output=True, text=True, timeout=60)


def test_sigterm_during_tunes_run_asks_tune_to_stop_then_exits_143_with_the_resume_command():
    proc = run("fit", "SIGTERM")
    assert proc.returncode == 143, proc.stderr
    assert "tune asked to stop: True" in proc.stdout
    assert proc.stderr.strip().splitlines()[-1] == (
        "raysweep: interrupted; continue with: python -m raysweep.tune --resume /results/sweep"
    )


def test_ctrl_c_outside_tunes_run_exits_130_at_once():
    proc = run("plan", "SIGINT")
    assert proc.returncode == 130 and "not stopped" not in proc.stdout, proc.stderr
    assert "--resume /results/sweep" in proc.stderr


def test_a_second_ctrl_c_stops_at_once():
    proc = run("fit", "SIGINT", "again")
    assert proc.returncode == 130, proc.stderr
    assert proc.stderr.count("--resume /results/sweep") == 1


def test_before_the_sweep_began_there_is_nothing_to_resume():
    from raysweep.interrupt import resume_line

    assert resume_line(None) == "raysweep: interrupted before the sweep began; nothing to resume"
    assert signal.SIGINT + 128 == 130 and signal.SIGTERM + 128 == 143
