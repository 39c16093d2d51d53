"""Worker groups shared by the trials of one shape: Ray Train starts a trial's processes once per group.

A trial in a Train run of its own starts three fresh processes one after another (Tune's trial
actor, Train's controller, the worker), each importing Ray and torch, then timm and DeepSpeed:
seconds before its first step (docs/performance.md, section 3), often more than it trains.  Here a
group is one Ray Train run (a ``TorchTrainer`` of ``trainers.trial_server``) whose workers train
the trials it is handed, one after another: a ``TrialGroup`` actor holds its queue of trials and
their reports, the sweep's own process runs the Train run (``TrainRuns``), and the sweep's
``GroupPool`` keeps the idle groups by shape (``train_run.SHAPE_FIELDS``) and hands one to each
trial that asks.

What a trial is stays the same: one Tune trial per configuration, whose driver (``run_in_group``)
passes the group's reports on to Tune as its own; a fresh model, engine, optimizer, seed, data
order and peak-memory figure (``trainers.trial_server``).  A trial that fails (an exception, a
killed rank, out of memory, a collective timeout) ends its group's run: the failure is that
trial's, the group is dropped, and the next trial of that shape gets a new one.
"""

from __future__ import annotations

import json
import os
import threading
import time
import uuid
from collections import defaultdict
from collections.abc import Iterator
from contextlib import contextmanager
from dataclasses import dataclass
from pathlib import Path

import ray
import ray.tune
from ray.train import Checkpoint
from ray.train.v2.api.callback import UserCallback

from raysweep.core.params import TrialParams
from raysweep.core.schema import TRIAL_ID_KEY
from raysweep.core.spec import NextTrial, RankTrial
from raysweep.core.status import FINAL_KEY
from raysweep.runtime.early_stop import tune_stopped
from raysweep.runtime.retry import retried
from raysweep.runtime.train_run import shape_of, start_train_coordinator, torch_trainer

# A call that waits for news (a worker's next trial, a driver's next report) returns empty after
# this long, so that no actor thread is held for ever by a caller that went away.
POLL_S = 2.0


def pool_name(sweep: str) -> str:
    return f"raysweep-worker-groups-{sweep}"


@ray.remote(num_cpus=0, max_concurrency=64)
class TrialGroup:
    """The trials handed to one Ray Train run's workers, in order, and what that run reports back.

    The run itself (``TorchTrainer.fit``) goes on in the sweep's process (``TrainRuns``), which
    tells the group when it ends; this actor imports no torch, so it starts in a fraction of a second.
    """

    def __init__(self):
        self.trials: list[RankTrial] = []
        self.picked = -1  # the last trial the workers have started
        self.reports: dict[str, list[tuple[dict, Checkpoint | None]]] = defaultdict(list)
        self.stopping = False
        self.ended = False
        self.failure: Exception | None = None
        self.changed = threading.Condition()
        self.stopped_trials: set[str] = set()  # stopped by Tune: the workers end them after the epoch in flight

    def run(self, trial: RankTrial) -> int:
        """Queue a trial for the workers; its number in this group."""
        with self.changed:
            self.reports.clear()  # the last trial's driver has read them all: it released the group
            self.trials.append(trial)
            self.changed.notify_all()
            return len(self.trials) - 1

    def next_trial(self, index: int) -> NextTrial:
        """A worker's next trial, or stop, or neither yet (ask again)."""
        with self.changed:
            self.changed.wait_for(lambda: index < len(self.trials) or self.stopping, timeout=POLL_S)
            if index < len(self.trials):
                self.picked = max(self.picked, index)
                return NextTrial(trial=self.trials[index])
            return NextTrial(stop=self.stopping)

    def post(self, metrics: dict, checkpoint: Checkpoint | None) -> None:
        """A report of all ranks, from the Train controller (``GroupReportCallback``)."""
        with self.changed:
            self.reports[metrics[TRIAL_ID_KEY]].append((metrics, checkpoint))
            self.changed.notify_all()

    def end(self, failure: Exception | None) -> None:
        """The Train run has returned (``failure`` None) or raised: the trial in flight gets the failure."""
        with self.changed:
            self.ended, self.failure = True, failure
            self.changed.notify_all()

    def progress(self, trial_id: str, index: int, seen: int) -> tuple[list, bool, bool, Exception | None]:
        """Reports of ``trial_id`` after its first ``seen``; whether the workers started it; whether the run ended."""
        with self.changed:
            self.changed.wait_for(lambda: len(self.reports[trial_id]) > seen or self.ended, timeout=POLL_S)
            return self.reports[trial_id][seen:], self.picked >= index, self.ended, self.failure

    def stop_trial(self, trial_id: str) -> None:
        """Tune stopped this trial (its scheduler): the workers end it once its current epoch is reported."""
        self.stopped_trials.add(trial_id)

    def trial_stopped(self, trial_id: str) -> bool:
        return trial_id in self.stopped_trials

    def stop(self) -> None:
        """Let the workers return once idle: the run ends and its placement group is freed."""
        with self.changed:
            self.stopping = True
            self.changed.notify_all()


def serve_trials_per_worker(config: dict) -> None:
    """The group's Ray Train loop; imported on the workers only (timm and DeepSpeed: seconds the sweep skips)."""
    from trainers.trial_server import serve_trials_per_worker

    serve_trials_per_worker(config)


class GroupReportCallback(UserCallback):
    """On the Train controller: each report of all ranks goes to the group, in order (hence the wait)."""

    def __init__(self, group):
        self.group = group

    def after_report(self, run_context, metrics: list[dict], checkpoint: Checkpoint | None) -> None:
        ray.get(self.group.post.remote(metrics[0], checkpoint))


class TrainRuns:
    """The groups' Ray Train runs, each ``TorchTrainer.fit`` in a thread of the sweep's own process.

    That process has torch imported already (and keeps it warm): a run started from it creates
    Train's controller at once, where an actor of its own would first start and import torch and
    ``ray.train.torch`` (seconds), on the first trial's
    critical path.  The controllers are then this process's: they end with it.
    """

    def __init__(self, storage_path: str, collective_timeout_s: int):
        self.storage_path, self.collective_timeout_s = storage_path, collective_timeout_s
        self.threads: list[threading.Thread] = []

    def start(self, params: TrialParams, name: str, group) -> None:
        """Start the Train run named ``name`` whose workers serve ``group``'s trials."""
        trainer = torch_trainer(
            params,
            serve_trials_per_worker,
            {"group": group},
            name,
            self.storage_path,
            self.collective_timeout_s,
            callbacks=[GroupReportCallback(group)],
        )
        thread = threading.Thread(target=fit_then_end, args=(trainer, group), name=name, daemon=True)
        thread.start()
        self.threads.append(thread)

    def host(self, pool) -> None:
        """Start the runs of the groups ``pool`` makes, until it closes (a thread's loop)."""
        while True:
            made, closing = ray.get(pool.unhosted.remote())
            for params, name, group in made:
                self.start(params, name, group)
            if closing:
                return

    def wait(self, timeout_s: float) -> None:
        deadline = time.monotonic() + timeout_s
        for thread in self.threads:
            thread.join(max(0.0, deadline - time.monotonic()))


def fit_then_end(trainer, group) -> None:
    failure = None
    try:
        trainer.fit()
    except Exception as e:  # the trial in flight gets it (its driver re-raises it)
        failure = e
    # After the sweep's ray.shutdown (input planning refused, an interrupt) nobody is left to tell, and
    # any call would start a new local Ray from this thread (Ray's auto-init).
    if ray.is_initialized():
        group.end.remote(failure)


@ray.remote(num_cpus=0, max_concurrency=8)
class GroupPool:
    """The sweep's worker groups, idle ones by shape; the groups it makes are hosted by ``TrainRuns``."""

    def __init__(self, sweep: str):
        self.sweep = sweep
        self.groups: dict[str, object] = {}  # by name: every group not yet dropped
        self.idle: dict[tuple, list[str]] = defaultdict(list)
        self.busy: dict[str, tuple] = {}  # name: shape
        self.made: list[tuple] = []  # (params, name, group) whose Train runs are not started yet
        self.closing = False
        # Held by every call: unhosted() waits here for news while drivers acquire and release.
        self.changed = threading.Condition()

    def adopt(self, params: TrialParams, name: str, group) -> None:
        """Keep a group started before any trial asked (its run already going) for its shape's first trial."""
        with self.changed:
            self.groups[name] = group
            self.idle[shape_of(params)].append(name)

    def acquire(self, params: TrialParams) -> tuple:
        """An idle group of this shape, or a new one once idle groups of other shapes have let go of their devices."""
        shape = shape_of(params)
        with self.changed:
            if self.idle[shape]:
                name = self.idle[shape].pop()
            else:
                for names in self.idle.values():
                    for other in names:
                        self.groups.pop(other).stop.remote()
                self.idle.clear()
                name = group_name(self.sweep)
                self.groups[name] = TrialGroup.remote()
                self.made.append((params, name, self.groups[name]))
                self.changed.notify_all()
            self.busy[name] = shape
            return self.groups[name], name

    def unhosted(self) -> tuple[list[tuple], bool]:
        """The groups made since the last call (their runs to start), and whether the pool is closing."""
        with self.changed:
            self.changed.wait_for(lambda: self.made or self.closing, timeout=POLL_S)
            made, self.made = self.made, []
            return made, self.closing

    def release(self, name: str, alive: bool) -> None:
        """Keep a live group for its shape's next trial, unless a group of another shape is running: that
        one may be waiting for the devices this one holds (started while this one was busy)."""
        with self.changed:
            shape = self.busy.pop(name)
            if alive and all(other == shape for other in self.busy.values()):
                self.idle[shape].append(name)
            else:
                self.groups.pop(name).stop.remote()

    def close(self) -> None:
        """Stop every group (the sweep is over); their runs end once their workers return."""
        with self.changed:
            for handle in self.groups.values():
                handle.stop.remote()
            self.groups.clear()
            self.idle.clear()
            self.busy.clear()
            self.closing = True
            self.changed.notify_all()


class WorkerGroups:
    """What a sweep's process holds of its pool: the pool, the Train runs it hosts, the groups it started itself."""

    def __init__(self, sweep: str, runs: TrainRuns, pool, share: bool):
        self.sweep, self.runs, self.pool, self.share = sweep, runs, pool, share
        self.owned: list = []  # groups this process made: killing the pool does not end them

    def prestart(self, params: TrialParams | None) -> None:
        """Start the group of a trial of this shape now, before any trial asks for it (with shared workers)."""
        if params is None or not self.share:
            return
        started = (params, group_name(self.sweep), TrialGroup.remote())
        self.runs.start(*started)
        self.owned.append(started[2])
        # waited for: a driver's acquire, from another process, must find it
        ray.get(self.pool.adopt.remote(*started))


@contextmanager
def group_pool(sweep: str, storage_path: str, collective_timeout_s: int, share: bool) -> Iterator[WorkerGroups]:
    """The pool of a Tune run of ``sweep``'s trials, while it runs; every group's run ends with it.

    The pool is owned by the calling process (the CLI's) and the groups' Train runs go on in it
    (``TrainRuns``), so they also end where that process is killed.  Ray Train's autoscaling
    coordinator starts first: every Train run's controller (a group's, or a trial's own with
    ``share=False``) waits on it as it starts.  The pool waits for its groups' runs to end (a group
    still starting ends as soon as its workers ask for a trial) however it is left: a run's thread
    still inside Ray when the caller's ``ray.shutdown`` comes makes Ray end the whole process.
    """
    start_train_coordinator()
    runs = TrainRuns(storage_path, collective_timeout_s)
    pool = GroupPool.options(name=pool_name(sweep)).remote(sweep)
    host = threading.Thread(target=runs.host, args=(pool,), name=f"{sweep}-group-runs", daemon=True)
    host.start()
    groups = WorkerGroups(sweep, runs, pool, share)
    try:
        yield groups
    finally:
        ray.get(pool.close.remote())
        host.join()
        runs.wait(CLOSE_TIMEOUT_S)
        ray.kill(pool)
        for group in groups.owned:
            ray.kill(group)


# How long a sweep's end waits for its groups' runs to end (their workers return once idle).
CLOSE_TIMEOUT_S = 30.0


def group_name(sweep: str) -> str:
    return f"{sweep}-workers-{uuid.uuid4().hex[:8]}"


@dataclass
class Outcome:
    failure: Exception | None
    started: bool  # the workers began the trial (a group that failed before that was not its fault)
    checkpoint: Checkpoint | None  # the trial's latest, to resume from


def run_in_group(trial: RankTrial) -> None:
    """Run one trial in a group of the sweep's pool, retried as a Train run is (``retried``).

    A group that fails is replaced; the trial starts again from its latest checkpoint. A group
    that failed before its workers began this trial (the last trial's end) costs no attempt.
    A trial that Tune starts again (a resumed sweep) continues from the checkpoint it last recorded.
    """
    pool = ray.get_actor(pool_name(trial.spec.sweep))
    attempt, resume_from, spare = 0, last_checkpoint(trial.run_dir), 1
    while True:
        group, name = ray.get(pool.acquire.remote(trial.params))
        try:
            outcome = follow(group, trial.attempted(attempt, name, resume_from))
        except SystemExit:  # Tune stopped the trial: its workers end it within the epoch, the group serves on
            group.stop_trial.remote(trial.trial_id)
            ray.get(pool.release.remote(name, alive=True))
            raise
        ray.get(pool.release.remote(name, alive=outcome.failure is None))
        if outcome.failure is None:
            return
        if not outcome.started and spare:
            spare -= 1
            continue
        if not retried(outcome.failure, attempt, trial.spec.max_failures):
            raise outcome.failure
        attempt, resume_from = attempt + 1, outcome.checkpoint or resume_from


def follow(group, trial: RankTrial) -> Outcome:
    """Hand ``trial`` to ``group`` and pass its reports to Tune until its final one, or the group's end."""
    index = ray.get(group.run.remote(trial))
    seen, checkpoint = 0, trial.resume_from
    while True:
        reports, started, ended, failure = ray.get(group.progress.remote(trial.trial_id, index, seen))
        for metrics, reported in reports:
            seen += 1
            if reported is not None:
                checkpoint = reported
                remember_checkpoint(trial.run_dir, reported)
            ray.tune.report(metrics)
            if metrics[FINAL_KEY]:
                return Outcome(None, True, checkpoint)
        if tune_stopped():
            raise SystemExit(0)  # as ray.tune.report does for a stopped trial
        if ended:
            failure = failure or RuntimeError(f"worker group ended before trial {trial.trial_id} finished")
            return Outcome(failure, started, checkpoint)


# In a trial's own run directory (where a run of its own keeps its checkpoints): its latest one in a group's.
CHECKPOINT_POINTER = "latest_checkpoint.json"


def remember_checkpoint(run_dir: str, checkpoint: Checkpoint) -> None:
    path = Path(run_dir) / CHECKPOINT_POINTER
    path.parent.mkdir(parents=True, exist_ok=True)
    temporary = path.with_suffix(".tmp")
    temporary.write_text(json.dumps({"path": checkpoint.path}))
    os.replace(temporary, path)


def last_checkpoint(run_dir: str) -> Checkpoint | None:
    """The checkpoint ``remember_checkpoint`` recorded last, while it still exists."""
    path = Path(run_dir) / CHECKPOINT_POINTER
    if not path.is_file():
        return None
    recorded = json.loads(path.read_text())["path"]
    return Checkpoint(recorded) if Path(recorded).is_dir() else None
