"""Ray's and the profiler's chatter stays in Ray's log files; raysweep's lines, warnings and errors reach the screen.

Ray forwards every worker's stdout/stderr to this terminal (``log_to_driver``), after writing it to the
worker's files under the session's ``logs/``. Two sources would flood it: Ray Train logs each
``ray.train.report`` with its whole metrics dict ("Reporting training result ... TrainingReport(...)",
an INFO line of a logger named after its file, so Ray Train's log level does not reach it), and the
detached PlacementGroupCleaner actor warns every second that the State API is unavailable when the
dashboard is off (and prints a traceback when several local Ray instances run on one machine); nothing it
prints is about the user's sweep. The torch profiler of a trial's profiled window writes trace points and
errors that do not concern its measurement from every rank, and Ray forwards them seconds later, below the
sweep's summary. A rank's traceback of a file the dataset cannot read is dropped too: the sweep's process
prints that error as its one line (``raysweep.data_stop``), and so is the controller's traceback of a cleaner
that was slow to stop on a loaded machine. The forwarding is filtered on the driver, so
those lines are kept in the files and dropped from the screen only.

Tune's controller, in the sweep's own process, warns whenever one of its steps takes over half a second
(``ray.tune.utils.util.warn_if_slow``); one slow result prints four warnings (the callbacks', the result's
twice and the results'), the last advising to report less often.  A trial reports once an epoch, and its
result takes that long when the sweep's result tables are written on a busy machine (two Parquet files an
epoch, ``raysweep.results.recorder``, kept per epoch so that a resumed sweep loses none): those warnings go to
``DRIVER_LOG`` in Ray's logs directory instead (``slow_step_warnings_to_file``).
"""

from __future__ import annotations

import logging
import os
import sys
from pathlib import Path

CHATTER = (
    "Reporting training result",  # ray/train/v2/_internal/execution/context.py, per report, every rank
    "State API may be temporarily unavailable",  # ray/train/v2/.../controller/placement_group_cleaner.py
    # torch.profiler's kineto, on every rank of a profiled window (trainers.measure.comm_profile), straight to the
    # process's stderr: its start/stop trace points, CUPTI's complaint that the profiler was set up on another
    # thread than the one it runs on, and on CPU workers its failed GPU count (CUDA error 35: no driver).
    # None of them touches the CPU events the window measures.
    "SyncActivityProfilerHandler.cpp",
    "External init callback must run in same thread as registerClient",
    "gpuGetDeviceCount failed with code",
    # the raylet, when a sweep's trial drivers (a sliver of CPU each) start more worker processes at once
    # than it has CPUs: a hint for Ray users about fractional CPU requests, which raysweep makes on purpose
    "PYTHON worker processes have been started on node",
    # Ray core's warning about restarting Ray Train's own preemption watcher (its controller's, on a joined
    # cluster), which no sweep can act on
    "Actor with class name: 'PreemptionWatcher'",
)
CHATTERING_ACTORS = ("PlacementGroupCleaner",)  # Ray Train's internal actors whose every line is chatter
PRINTER = "ray_print_logs"  # the name ray.init gives its forwarding handler


# Tracebacks dropped whole, each from the line holding its first marker to the one holding its second (where there is
# a third marker, only if a line between holds it): Ray Train's worker's traceback of its training function's error
# where the sweep's process reports that error itself; the controller's of a placement-group cleaner that did not
# answer its stop within Ray's timeout on a loaded machine (the controller goes on and the run ends as it would); and
# a trial actor's, ended by Ray at the sweep's end while it ran a weak reference's callback, where Ray's SIGTERM
# handler raised SystemExit ("Exception ignored in").
DROPPED_TRACEBACKS = (
    ("Error in training function:", "raysweep.core.errors.DataFileError:", ""),
    ("Failed to stop PlacementGroupCleaner gracefully", "GetTimeoutError", ""),
    ("Exception ignored in:", "SystemExit: 1", "in sigterm_handler"),
)


def is_chatter(line: str) -> bool:
    return any(marker in line for marker in CHATTER)


def without_dropped_tracebacks(lines: list[str]) -> list[str]:
    """``lines`` less each traceback of ``DROPPED_TRACEBACKS`` (and the blank line after it); one whose end is
    not among ``lines`` is kept."""
    kept: list[str] = []
    # where the traceback being read began in ``kept``, the marker that ends it, and the one it must hold
    start, end, inside = None, None, ""
    dropped = False  # the line before was a dropped traceback's last: the blank line after it goes too
    for line in lines:
        for first, last, within in DROPPED_TRACEBACKS:
            if first in line:
                start, end, inside = len(kept), last, within
        if start is not None and end in line:
            if inside and not any(inside in held for held in kept[start:]):
                start, end = None, None  # not the traceback this marker names: kept
            else:
                del kept[start:]
                start, end, dropped = None, None, True
                continue
        if not (dropped and not line.strip()):
            kept.append(line)
        dropped = False
    return kept


def is_chattering_actor(name: str) -> bool:
    return any(actor in name for actor in CHATTERING_ACTORS)


def quiet_forwarded_logs() -> None:
    """Wrap Ray's printer of forwarded worker lines in a filter of ``CHATTER`` (after ``ray.init``)."""
    from ray._private.ray_logging import global_worker_stdstream_dispatcher as dispatcher

    printers = [handler for name, handler in dispatcher.handlers if name == PRINTER]
    if not printers:
        return  # log_to_driver is off: nothing reaches the screen
    printer = printers[0]

    def print_without_chatter(data: dict) -> None:
        if is_chattering_actor(data.get("actor_name") or data.get("task_name") or ""):
            return
        lines = [line for line in without_dropped_tracebacks(data.get("lines", [])) if not is_chatter(line)]
        if lines:
            printer({**data, "lines": lines})

    dispatcher.remove_handler(PRINTER)
    dispatcher.add_handler(PRINTER, print_without_chatter)


SLOW_STEP_LOGGER = "ray.tune.utils.util"  # the logger warn_if_slow writes to
SLOW_STEP_MARKER = "which may be a performance bottleneck"  # in each of its messages
DRIVER_LOG = "raysweep-driver.log"


class ToFile(logging.Filter):
    """A logger's records that contain ``marker``, written to ``path`` instead of reaching its handlers."""

    def __init__(self, marker: str, path: Path):
        super().__init__()
        self.marker = marker
        self.handler = logging.FileHandler(path, delay=True)  # the file exists once something is written
        self.handler.setFormatter(logging.Formatter("%(asctime)s %(levelname)s %(name)s -- %(message)s"))

    def filter(self, record: logging.LogRecord) -> bool:
        if self.marker not in record.getMessage():
            return True
        self.handler.handle(record)
        return False


def slow_step_warnings_to_file(logs_dir: str | None = None) -> None:
    """Tune's slow-step warnings of this process into ``DRIVER_LOG`` in ``logs_dir`` (after ``ray.init``: the
    session's logs directory) instead of the terminal; its other warnings are untouched.  A later call (the next
    sweep of the process) replaces the file."""
    import ray

    if logs_dir is None:
        node = ray._private.worker._global_node
        if node is None:  # a Ray Client driver: no logs directory here, so they stay on the terminal
            return
        logs_dir = node.get_logs_dir_path()
    logger = logging.getLogger(SLOW_STEP_LOGGER)
    for old in [f for f in logger.filters if isinstance(f, ToFile)]:
        logger.removeFilter(old)
        old.handler.close()
    logger.addFilter(ToFile(SLOW_STEP_MARKER, Path(logs_dir) / DRIVER_LOG))


def logs_location() -> str:
    """Where this session's Ray logs are: the local session's directory, or the head node's."""
    import ray

    node = ray._private.worker._global_node
    if node is not None:
        return node.get_logs_dir_path()
    return "/tmp/ray/session_latest/logs on the cluster's head node"


def plain_log_output() -> None:
    """On a plain log, Ray's forwarded worker lines come without colour codes too."""
    if not sys.stdout.isatty():
        os.environ.setdefault("RAY_COLOR_PREFIX", "0")  # read by Ray as it prints each line
