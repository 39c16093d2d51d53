"""The typed seam from planning to a rank: what Tune is handed for a trial, and what its ranks are handed.

The searcher hands Tune a ``TrialSpec`` per trial (Tune's ``config`` is a dict: it holds the spec under
``SPEC_KEY``); the trial's driver adds what only it knows (Tune's trial id, its start, its run directory)
and each attempt its number, worker group and checkpoint, as a ``RankTrial``, which the rank reads as is.
Both are plain frozen dataclasses: Tune and Ray Train pickle them across processes unchanged.
"""

from __future__ import annotations

import dataclasses
from collections.abc import Callable
from dataclasses import dataclass
from typing import Any

from raysweep.core.compile_decision import CompileCost
from raysweep.core.params import TrialParams

# The one key of a trial's Tune ``config``, and of a Ray Train loop's ``train_loop_config``.
SPEC_KEY = "trial_spec"
RANK_TRIAL_KEY = "rank_trial"


@dataclass(frozen=True)
class TrialSpec:
    """One trial of a sweep as the searcher hands it to Tune."""

    sweep: str
    sweep_dir: str  # the sweep's result directory (its tables), absolute
    storage_path: str  # where Ray Train keeps the trial's runs (checkpoints, fault markers)
    collective_timeout_s: int
    max_failures: int  # worker-group restarts of a failed trial
    share_workers: bool  # run in a worker group shared by the trials of its shape
    index: int  # the trial's position in the planned order
    params: TrialParams

    def run_name(self, trial_id: str) -> str:
        """The trial's Ray Train run name (a run of its own), and its directory's under ``storage_path``."""
        return f"{self.sweep}-{trial_id}"

    def run_dir(self, trial_id: str) -> str:
        return f"{self.storage_path}/{self.run_name(trial_id)}"


def spec_of(config: dict[str, Any]) -> TrialSpec:
    """The trial spec in a Tune trial's ``config``."""
    return config[SPEC_KEY]


@dataclass(frozen=True)
class RankTrial:
    """One attempt at a trial, as each of its ranks is handed it."""

    spec: TrialSpec
    trial_id: str  # Tune's
    started_at: float  # the driver's start, epoch seconds (the setup phases are timed from it)
    run_dir: str  # the trial's own directory in Ray Train's storage, whichever run trains it
    attempt: int = 0  # worker-group restarts before this one
    worker_group: str = ""  # the Ray Train run whose workers train this attempt
    resume_from: Any = None  # a ``ray.train.Checkpoint`` to continue from (core imports no Ray)
    # compile=auto: the compile's cost and gain measured by the sweep's earlier trials of this shape, where
    # the driver could read them (None: the defaults); the ranks decide from it (``decide_compile``).
    compile_cost: CompileCost | None = None
    # In a shared group: asks whether Tune stopped the trial (every rank asks after each epoch's report).
    stop_requested: Callable[[], bool] | None = None

    @property
    def params(self) -> TrialParams:
        return self.spec.params

    @property
    def fault_marker_dir(self) -> str:
        return f"{self.run_dir}/faults"

    def attempted(self, attempt: int, worker_group: str, resume_from: Any = None) -> RankTrial:
        """This trial's attempt number ``attempt``, in ``worker_group``, from ``resume_from``."""
        return dataclasses.replace(self, attempt=attempt, worker_group=worker_group, resume_from=resume_from)


@dataclass(frozen=True)
class NextTrial:
    """A shared worker group's answer to its workers asking for their next trial."""

    trial: RankTrial | None = None  # the trial to train now
    stop: bool = False  # the group is stopping: return

    # neither: nothing yet, ask again
