"""Early stopping: Tune's scheduler run per study and kept across a resume; how a stopped trial ends.

``StudyScheduler`` wraps the sweep's Tune scheduler (ASHA, median stopping).  An adaptive sweep gives every
grid point a study of its own with a fixed budget; its trials are compared only with the trials of that
study (one scheduler each), so a large batch, which learns less per epoch, is not stopped for trailing the
small batches' trials.  Tune's experiment checkpoint leaves the scheduler out (a restored run starts the one
pickled with the Tuner, empty), so the wrapper writes its schedulers' state to a file at every decision and
reads it back when a resumed run hands it its first trial.  The file lies beside Tune's experiment directory
(``STATE_FILE``), found from the trial Tune hands over rather than from a path pickled with the Tuner.

Tune stops a function trainable by setting its session's stop event; the driver's next
``ray.tune.report`` then raises ``SystemExit``.  A driver that follows a shared worker group waits
between reports, so it also looks at the event itself (``tune_stopped``), tells the group to end the
trial after the epoch in flight, and hands the group back to the pool before it exits.
"""

from __future__ import annotations

import os
import pickle
from collections.abc import Callable
from dataclasses import dataclass
from pathlib import Path

from ray import cloudpickle
from ray.tune.experiment import Trial
from ray.tune.schedulers import FIFOScheduler, TrialScheduler

from raysweep.core.spec import spec_of

# The schedulers' state, beside Tune's experiment directory rather than in it: Tune copies its own staging
# copy over that directory at every experiment checkpoint.
STATE_FILE = "schedulers.pkl"
# Tune waits this long for a stopped trial's thread before it gives up reusing the trial's actor
# (its default, 2 s, is about one wait for the group's news: the driver's hand-back would be cut off).
STOP_GRACE_S = 30


def early_stop_env() -> dict[str, str]:
    """Environment of the cluster's processes (the trial actors read it when Tune stops a trial)."""
    return {"TUNE_FUNCTION_THREAD_TIMEOUT_S": str(STOP_GRACE_S)}


def tune_stopped() -> bool:
    """Tune has stopped the trial this thread runs (its scheduler's decision, or the sweep's end)."""
    from ray.train._internal.session import get_session

    session = get_session()
    return session is not None and session.stop_event.is_set()


@dataclass(frozen=True)
class TrialRef:
    """A trial of the run before a resume, where a scheduler's saved state held the trial itself (the median
    rule keys its results by trial): Tune's trials are restored from Tune's own experiment state, not from ours."""

    trial_id: str


class StatePickler(cloudpickle.CloudPickler):
    """cloudpickle (the median rule keeps lambdas), a trial written as its id."""

    def persistent_id(self, obj):
        return obj.trial_id if isinstance(obj, Trial) else None


class StateUnpickler(pickle.Unpickler):
    def persistent_load(self, pid):
        return TrialRef(pid)


class StudyScheduler(FIFOScheduler):
    """One Tune scheduler per study (``make()`` builds each), its trials started in Tune's order (FIFO).

    ``study_size``: trials ``index // study_size`` share a study (0: every trial is in one study).
    """

    def __init__(self, make: Callable[[], TrialScheduler], study_size: int):
        super().__init__()
        self.make, self.study_size = make, study_size
        self.studies: dict[int, TrialScheduler] = {}
        self.state_path: Path | None = None  # known from the first trial (where this run's experiment is)

    def study(self, trial: Trial) -> TrialScheduler:
        if self.state_path is None:  # a run's first trial: the state the run before it left, if any
            self.state_path = Path(trial.storage.experiment_fs_path).parent / STATE_FILE
            if self.state_path.exists():
                with open(self.state_path, "rb") as f:
                    self.studies = StateUnpickler(f).load()
        key = spec_of(trial.config).index // self.study_size if self.study_size else 0
        if key not in self.studies:
            self.studies[key] = self.make()
        return self.studies[key]

    def save_state(self) -> None:
        partial = f"{self.state_path}.partial"
        with open(partial, "wb") as f:
            StatePickler(f).dump(self.studies)
        os.replace(partial, self.state_path)  # a kill mid-write leaves the last whole state

    def on_trial_add(self, tune_controller, trial) -> None:
        self.study(trial).on_trial_add(tune_controller, trial)
        self.save_state()

    def on_trial_error(self, tune_controller, trial) -> None:
        self.study(trial).on_trial_error(tune_controller, trial)
        self.save_state()

    def on_trial_result(self, tune_controller, trial, result: dict) -> str:
        decision = self.study(trial).on_trial_result(tune_controller, trial, result)
        self.save_state()
        return decision

    def on_trial_complete(self, tune_controller, trial, result: dict) -> None:
        self.study(trial).on_trial_complete(tune_controller, trial, result)
        self.save_state()

    def on_trial_remove(self, tune_controller, trial) -> None:
        self.study(trial).on_trial_remove(tune_controller, trial)
        self.save_state()

    def debug_string(self) -> str:
        return f"{len(self.studies)} stud(ies), each: " + next(
            (s.debug_string() for s in self.studies.values()), "none yet"
        )
