"""Engine checkpoints through Ray Train's storage, so a restarted worker group resumes mid-trial.

Every rank calls its engine's ``save`` (DeepSpeed and FSDP write per-rank shards) into its own local
directory and reports it; Ray Train merges the ranks' files into one checkpoint in storage.
On restart each rank loads that checkpoint and the trial continues at the next epoch: a run of its
own finds it with ``ray.train.get_checkpoint``, a trial in a shared worker group is handed it.
"""

from __future__ import annotations

import json
import shutil
import tempfile
from dataclasses import asdict
from pathlib import Path

import ray.train

from trainers.engines import Engine
from trainers.measure.meter import EpochMeasure, TrialMeter

PROGRESS = "progress.json"


def save_checkpoint(engine: Engine, meter: TrialMeter, rank: int) -> ray.train.Checkpoint:
    """A checkpoint of the engine (model, optimizer, schedule) and the trial's progress so far."""
    directory = Path(tempfile.mkdtemp(prefix="raysweep-ckpt-"))
    engine.save(directory, rank)
    if rank == 0:
        progress = {"epochs": [asdict(e) for e in meter.epochs], "first_step_at": meter.first_step_at}
        (directory / PROGRESS).write_text(json.dumps(progress))
    return ray.train.Checkpoint.from_directory(str(directory))


def discard(checkpoint: ray.train.Checkpoint | None) -> None:
    """The local copy is no longer needed once Ray Train has persisted it."""
    if checkpoint is not None:
        shutil.rmtree(checkpoint.path, ignore_errors=True)


def restore_checkpoint(engine: Engine, meter: TrialMeter, checkpoint: ray.train.Checkpoint | None) -> bool:
    """Load the trial's latest checkpoint, if it has one; True when the trial resumes."""
    if checkpoint is None:
        return False
    with checkpoint.as_directory() as directory:
        engine.load(Path(directory))
        progress = json.loads((Path(directory) / PROGRESS).read_text())
    meter.epochs = [EpochMeasure(**e) for e in progress["epochs"]]
    meter.first_step_at = resumed_first_step(progress["first_step_at"], meter.trial_started_at)
    return True


def resumed_first_step(recorded: float | None, trial_started_at: float) -> float | None:
    """The first step a resumed trial's setup is timed to: the checkpoint's, where it was taken since this trial's
    driver started (its worker group was started again); else none yet, as the checkpoint comes from an earlier
    driver (a resumed sweep) and this run's setup ends at its own first step, not before its start."""
    return recorded if recorded is not None and recorded >= trial_started_at else None
