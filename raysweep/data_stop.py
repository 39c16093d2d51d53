"""A file the dataset cannot read stops the sweep once, in the sweep's own process.

A trial's driver that met a ``DataFileError`` posts it (``raysweep.runtime.stop_requests``) rather than
failing: every pending trial would fail on the same file.  This callback reads the posts as Tune's run
goes, writes each posting trial's row (failed, with the error's line) and stops Tune's run as Ctrl-C
does (``interrupt.stop_for_data``): the pending trials are not started, and ``--resume`` runs the
stopped trial again once the file is fixed.
"""

from __future__ import annotations

import time

from ray.tune import Callback

import raysweep.interrupt as interrupt
from raysweep.core.status import TrialStatus
from raysweep.core.store import ResultStore
from raysweep.results.recorder import ResultTablesCallback
from raysweep.runtime.stop_requests import posted

# Seconds between two reads of the posts (a read is a call to the cluster).
READ_EVERY_S = 1.0


class DataErrorStop(Callback):
    """Reads the drivers' data errors while Tune runs; the first stops the run, every posting trial gets its row."""

    def __init__(self, store: ResultStore, recorder: ResultTablesCallback):
        self.store, self.recorder = store, recorder
        self.seen = 0
        self.last_read = 0.0

    def on_step_end(self, iteration, trials, **info):
        if time.monotonic() - self.last_read >= READ_EVERY_S:
            self.read(trials)

    def on_experiment_end(self, trials, **info):
        self.read(trials)  # a post made as the run ended

    def read(self, trials) -> None:
        self.last_read = time.monotonic()
        posts = posted(self.store.sweep, self.seen)
        self.seen += len(posts)
        by_id = {t.trial_id: t for t in trials}
        for trial_id, error in posts:
            if trial_id not in by_id:
                continue  # a trial of another run of the sweep's name (the max-batch search's probes)
            line = f"{type(error).__name__}: {error.dataset}: {error.path} {error.reason}"
            self.recorder.write_trial(by_id[trial_id], TrialStatus.FAILED, line)
            interrupt.stop_for_data(error)

    def __getstate__(self) -> dict:  # the posts' count is this run's: a resumed run's mailbox starts empty
        return {**self.__dict__, "seen": 0, "last_read": 0.0}
