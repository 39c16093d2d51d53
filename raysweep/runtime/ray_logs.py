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
prints that error as its one line (``raysweep.data_stop``). So is the Train controller's traceback of a
PlacementGroupCleaner that did not stop within the controller's wait, after a run that had ended: on a busy
machine (two sweeps on 2 cores) it follows every trial. The forwarding is filtered on the driver, so those
lines are kept in the files and dropped from the screen only.
"""

from __future__ import annotations

import os
import sys

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
)
CHATTERING_ACTORS = ("PlacementGroupCleaner",)  # Ray Train's internal actors whose every line is chatter
PRINTER = "ray_print_logs"  # the name ray.init gives its forwarding handler


# Tracebacks dropped whole, each from the line with its first marker to the line with its second; one that ends
# in another error is kept.
DROPPED_TRACEBACKS = (
    # Ray Train's worker, of its training function's error, where the sweep's process reports that error itself
    ("Error in training function:", "raysweep.core.errors.DataFileError:"),
    # Ray Train's controller (ray/train/v2/_internal/callbacks/placement_group_callback.py), when the cleaner's
    # stop outlasts the controller's wait for it
    ("Failed to stop PlacementGroupCleaner gracefully.", "ray.exceptions.GetTimeoutError:"),
)


def is_chatter(line: str) -> bool:
    return any(marker in line for marker in CHATTER)


def without_dropped_tracebacks(lines: list[str]) -> list[str]:
    """``lines`` less each traceback of ``DROPPED_TRACEBACKS`` that ends as that entry says."""
    kept: list[str] = []
    start = end = None  # where the traceback being read began in ``kept``, and the marker of its last line
    dropped = False  # the line before was a dropped traceback's last: the blank line after it goes too
    for line in lines:
        for first, last in DROPPED_TRACEBACKS:
            if first in line:
                start, end = len(kept), last
        if start is not None and end in line:
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
