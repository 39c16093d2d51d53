"""Writes the result tables from the sweep's own process, as Tune reports each trial's results.

Trial actors and Train workers may run on other nodes' disks; this callback runs in the
CLI's process, so the tables land where the user asked, whatever the cluster.
"""

from __future__ import annotations

import re
import time
from datetime import datetime, timezone
from pathlib import Path

from ray import cloudpickle
from ray.tune import Callback

from raysweep.core.errors import RankOutOfMemory
from raysweep.core.schema import (
    EPOCH_KEY,
    RANKS_KEY,
    TRIAL_KEY,
    EpochReport,
    RankReport,
    TrialRecord,
    TrialReport,
    from_metrics,
    params_row,
    row_of,
)
from raysweep.core.spec import spec_of
from raysweep.core.status import TrialStatus, trial_outcome
from raysweep.core.store import ResultStore
from raysweep.runtime.failures import chain, find_error


def error_summary(text: str, error: BaseException | None = None) -> str:
    """``Type: message`` of the exception a rank raised (``underlying``), else the last line of the trial's
    error file that names an exception (Ray's own headers, as ``[Rank 0 Error Snippet]:``, skipped)."""
    cause = underlying(error)
    if cause is not None:
        return f"{type(cause).__name__}: {first_line(cause)}"[:2000]
    lines = [line.strip() for line in text.splitlines() if line.strip() and not RAY_HEADER.match(line.strip())]
    causes = [line for line in lines if "Error" in line or "Exception" in line]
    return (causes[-1] if causes else lines[-1] if lines else "trial failed without an error message")[:2000]


# Lines Ray adds around a rank's traceback: they name no error of their own.
RAY_HEADER = re.compile(r"^\[Rank \d+ Error Snippet\]:?$|^Traceback \(most recent call last\):$")


def underlying(error: BaseException | None) -> BaseException | None:
    """The outermost exception in ``error``'s chain that is not one of Ray's wrappers: the one a rank raised
    (the exceptions it was raised while handling come after it)."""
    own = [e for e in chain(error) if not type(e).__module__.startswith("ray.")]
    return own[0] if own else None


def first_line(error: BaseException) -> str:
    lines = [line.strip() for line in str(error).splitlines() if line.strip()]
    return lines[0] if lines else "(no message)"


def error_text(trial) -> str:
    path = Path(trial.error_file) if getattr(trial, "error_file", None) else None
    return path.read_text(errors="replace") if path and path.is_file() else ""


def raised(trial) -> BaseException | None:
    """The exception the trial ended with, as Tune pickled it beside its text (None where it kept only the text)."""
    path = Path(trial.pickled_error_file) if getattr(trial, "pickled_error_file", None) else None
    if path is None or not path.is_file():
        return None
    try:
        return cloudpickle.loads(path.read_bytes())
    except Exception:  # it cannot be unpickled here: the text still says what happened
        return None


def peak_memory_of(error: BaseException | None) -> float | None:
    """The peak memory of the rank that ran out of memory, where its typed error came through."""
    oom = find_error(error, RankOutOfMemory)
    return oom.peak_mem_gib if oom else None


def rank_reports(result: dict) -> list[RankReport]:
    ranks = result.get(RANKS_KEY) or {}
    return [from_metrics(RankReport, ranks[k]) for k in sorted(ranks, key=int)]


class ResultTablesCallback(Callback):
    """Rebuilds the workers' typed reports from Tune's results and writes them as table rows.

    Times compared with each other are taken on one clock: Tune's start of a trial, the arrival of
    its reports and its end are this process's clock; the worker contributes only a span measured on
    its own clock (from its first step to its report), so clock skew between machines cancels.
    """

    def __init__(self, store: ResultStore):
        self.store = store
        self.started: dict[str, float] = {}
        self.first_step: dict[str, float] = {}  # this clock's estimate of the trial's first step
        self.last_report: dict[str, float] = {}
        self.epoch_rows: dict[str, dict[int, dict]] = {}
        self.last_result: dict[str, dict] = {}
        self.statuses: dict[str, TrialStatus] = {}
        self.completed_before: dict[str, bool] = {}

    def on_trial_start(self, iteration, trials, trial, **info):
        self.started[trial.trial_id] = time.time()

    def on_trial_result(self, iteration, trials, trial, result, **info):
        if EPOCH_KEY not in result or self.kept(trial.trial_id):
            return
        tid, now = trial.trial_id, time.time()
        report = from_metrics(TrialReport, result[TRIAL_KEY])
        if tid not in self.first_step and report.since_first_step_s is not None:
            self.first_step[tid] = now - report.since_first_step_s
        self.last_report[tid] = now
        if tid not in self.epoch_rows:  # a resumed sweep or trial keeps the epochs it already wrote
            earlier = self.store.read_trial_rows("epochs", tid)
            self.epoch_rows[tid] = {row["epoch"]: row for row in earlier}
        rows = self.epoch_rows[tid]
        epoch = row_of(from_metrics(EpochReport, result[EPOCH_KEY]))
        rows[epoch["epoch"]] = epoch  # a restarted run re-reports an epoch
        self.store.write_rows("epochs", tid, [rows[e] for e in sorted(rows)])
        self.store.write_rows("ranks", tid, [row_of(r) for r in rank_reports(result)])
        self.last_result[tid] = result

    def on_trial_complete(self, iteration, trials, trial, **info):
        result = self.last_result.get(trial.trial_id)
        if result is None:
            self.write_trial(trial, TrialStatus.FAILED, "trial ended before its last epoch was reported")
        else:  # completed, or stopped early by the sweep's scheduler (reported, but not its last epoch)
            self.write_trial(trial, trial_outcome(result), None)

    def on_trial_error(self, iteration, trials, trial, **info):
        text, error = error_text(trial), raised(trial)
        status = trial_outcome({}, text)
        peak = peak_memory_of(error) if status is TrialStatus.OOM else None
        self.write_trial(trial, status, error_summary(text, error), peak_mem_gib=peak)

    def kept(self, trial_id: str) -> bool:
        """A completed or stopped row is final: a resumed sweep may start a trial Tune had not yet saved as done."""
        if trial_id not in self.completed_before:
            self.completed_before[trial_id] = trial_id not in self.statuses and self.store.is_finished(trial_id)
        return self.completed_before[trial_id]

    def write_trial(self, trial, status: TrialStatus, error: str | None, peak_mem_gib: float | None = None) -> None:
        tid = trial.trial_id
        if self.kept(tid):
            return
        spec = spec_of(trial.config)
        params = spec.params
        last = self.last_result.get(tid, {})
        report = from_metrics(TrialReport, last[TRIAL_KEY]) if TRIAL_KEY in last else TrialReport()
        ranks = rank_reports(last)
        started = self.started.get(tid, time.time())
        now = time.time()
        record = TrialRecord(
            status=status.value,
            error=error,
            num_nodes=len({r.node for r in ranks}) if ranks else None,
            node_ids=[r.node for r in ranks] if ranks else None,
            device_names=[r.device_name for r in ranks] if ranks else None,
            peak_mem_gib=peak_mem_gib if peak_mem_gib is not None or not ranks else max(r.peak_mem_gib for r in ranks),
            setup_s=self.first_step[tid] - started if tid in self.first_step else None,
            teardown_s=now - self.last_report[tid] if tid in self.last_report else None,
            trial_wall_s=now - started,
            params_json=params.key(),
            run_order=spec.index if spec.index >= 0 else None,
            started_at=datetime.fromtimestamp(started, timezone.utc),
            finished_at=datetime.fromtimestamp(now, timezone.utc),
        )
        self.store.write_rows("trials", tid, [{**params_row(params), **row_of(record), **row_of(report)}])
        self.statuses[tid] = status
