"""Ctrl-C and SIGTERM in the CLI: stop, keep what the sweep has, say how to resume it, leave nothing running.

The first signal stops the sweep: during Tune's run, Tune is asked to stop scheduling (its own stop
request, the one its SIGUSR1 handler makes), which saves its experiment state; the rows of finished
trials are written already, as they end, and a trial cut off mid-run has no row (``--resume`` runs it
again, from its last checkpoint, and skips every trial that has one).  Then, or after ``GRACE_S`` at
the latest, or at once on a second Ctrl-C, the process prints raysweep's resume command, ends every
process of its local Ray (``cluster.kill_local_now``) and exits 130 (SIGINT) or 143 (SIGTERM), without
unwinding through Ray: a Train run's thread still inside Ray would hold the exit.  Ray's own handler
for SIGTERM in the driver (a native stack dump) is replaced once Ray is up (``reinstall``).

A file of the dataset that cannot be read stops Tune the same way (``stop_for_data``): what the sweep has
stays, and once Tune's run returns the ``DataFileError`` is raised, saying how to resume (the CLI prints it
as its one error line and exits 2).
"""

from __future__ import annotations

import logging
import os
import signal
import sys
import threading
from collections.abc import Iterator
from contextlib import contextmanager
from pathlib import Path

from raysweep.core.errors import DataFileError
from raysweep.core.paths import shell_path
from raysweep.runtime import cluster

SIGNALS = (signal.SIGINT, signal.SIGTERM)
# How long Tune may take to stop; ending the processes then takes up to 10 s: the exit comes within
# 30 s of the signal, as the CLI promises.
GRACE_S = 15.0


class StopRequest:
    """The CLI process's signal handling while ``main`` runs (``handled``); the sweep tells it its directory."""

    def __init__(self):
        self.installed = False
        self.received: int | None = None
        self.sweep_dir: Path | None = None  # a sweep that --resume can continue, once it is one
        self.in_fit = False
        self.finishing = threading.Lock()  # one finish: the grace timer's or a signal's
        self.data_error: DataFileError | None = None  # the first that stopped Tune's run

    def handle(self, signum: int, frame) -> None:
        if self.finishing.locked():
            return  # already on the way out (this thread may be the one finishing)
        if self.received is not None:
            self.finish()  # a second signal: at once
        self.received = signum
        if not self.in_fit:
            self.finish()
        print(
            "raysweep: stopping: trials in flight keep their checkpoints and run again on --resume "
            f"(Ctrl-C again to stop at once; at most {GRACE_S:.0f} s)",
            file=sys.stderr,
            flush=True,
        )
        threading.Timer(GRACE_S, self.finish).start()
        stop_tune(signum, frame)

    def finish(self) -> None:
        """Say how to continue, end the local Ray, exit with the signal's status."""
        if not self.finishing.acquire(blocking=False):
            threading.Event().wait()  # the other caller exits the process
        signum = self.received or signal.SIGINT
        sys.stdout.flush()
        print(resume_line(self.sweep_dir), file=sys.stderr, flush=True)
        # what the sweep's threads say as the processes they wait on end is noise now
        quiet = os.open(os.devnull, os.O_WRONLY)
        os.dup2(quiet, sys.stdout.fileno())
        os.dup2(quiet, sys.stderr.fileno())
        cluster.kill_local_now()
        os._exit(128 + signum)


STOP = StopRequest()


def stop_requested() -> bool:
    """A Ctrl-C or SIGTERM has asked the sweep to stop."""
    return STOP.received is not None


def stop_tune(signum: int = signal.SIGUSR1, frame=None) -> None:
    """Ask Tune's run in this process to stop as its own SIGUSR1 handler does: it saves its experiment state, the
    trials it cut off run again on ``--resume`` and the ones not started stay pending."""
    logging.getLogger("ray.tune").setLevel(logging.CRITICAL)  # its stop advice is Tune's, not raysweep's
    tune_stop = signal.getsignal(signal.SIGUSR1)
    if callable(tune_stop):
        tune_stop(signum, frame)


def stop_for_data(error: DataFileError) -> None:
    """A trial met a file the dataset cannot read: stop Tune's run (once), and raise ``error`` when it returns."""
    if STOP.data_error is None:
        STOP.data_error = error
        stop_tune()


def resume_line(sweep_dir: Path | None) -> str:
    if sweep_dir is None:
        return "raysweep: interrupted before the sweep began; nothing to resume"
    return f"raysweep: interrupted; continue with: {resume_command(sweep_dir)}"


def resume_command(sweep_dir: Path) -> str:
    """The command that continues the sweep in ``sweep_dir``, as the user can run it from this directory."""
    return f"python -m raysweep.tune --resume {shell_path(sweep_dir)}"


@contextmanager
def handled() -> Iterator[None]:
    """Ctrl-C and SIGTERM taken in this process (the CLI's main thread), from Tune too, while the block runs."""
    previous = {signum: signal.getsignal(signum) for signum in SIGNALS}
    tune_handler = os.environ.get("TUNE_DISABLE_SIGINT_HANDLER")
    os.environ["TUNE_DISABLE_SIGINT_HANDLER"] = "1"
    STOP.installed = True
    reinstall()
    try:
        yield
    finally:
        STOP.installed = False
        for signum, handler in previous.items():
            signal.signal(signum, handler)
        if tune_handler is None:
            os.environ.pop("TUNE_DISABLE_SIGINT_HANDLER", None)
        else:
            os.environ["TUNE_DISABLE_SIGINT_HANDLER"] = tune_handler


def reinstall() -> None:
    """Again, after ``ray.init``: Ray's core worker puts its own SIGTERM handler in place."""
    if STOP.installed:
        for signum in SIGNALS:
            signal.signal(signum, STOP.handle)


def resumable(sweep_dir: Path | None) -> None:
    """From here on, ``--resume sweep_dir`` continues the sweep (None: nothing does)."""
    STOP.sweep_dir = sweep_dir


def fitting(active: bool) -> None:
    """Tune's run starts (a signal asks it to stop) or has returned (a signal received meanwhile ends the process;
    a data error that stopped it is raised, with the command that resumes the sweep)."""
    STOP.in_fit = active
    if not active and STOP.received is not None:
        STOP.finish()
    if not active and STOP.data_error is not None:
        error, STOP.data_error = STOP.data_error, None
        raise error if STOP.sweep_dir is None else error.resumable_with(resume_command(STOP.sweep_dir))
