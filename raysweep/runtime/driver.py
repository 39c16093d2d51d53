"""The Tune function trainable of one trial: it runs the trial's ranks through Ray Train.

By default the trial runs in a worker group it shares with the sweep's other trials of its shape
(``raysweep.runtime.worker_groups``); with ``share_workers`` off it is a Ray Train run of its own.
"""

from __future__ import annotations

import time
from pathlib import Path

import ray.tune
from ray.train import TrainingFailedError
from ray.tune.integration.ray_train import TuneReportCallback

from raysweep.core.errors import is_out_of_memory
from raysweep.core.params import TrialParams
from raysweep.core.store import ResultStore
from raysweep.runtime.train_run import torch_trainer
from raysweep.runtime.worker_groups import run_in_group


def train_driver_fn(config: dict) -> None:
    """Run one trial: ``num_workers`` ranks in one placement group, metrics passed back to Tune."""
    started_at = time.time()
    trial_id = ray.tune.get_context().get_trial_id()
    if finished_before(config, trial_id):
        return
    trial = worker_config(config, trial_id, started_at)
    if config["share_workers"]:
        run_in_group(config, trial)
    else:
        run_alone(config, trial)


def worker_config(config: dict, trial_id: str, started_at: float) -> dict:
    """Everything a rank needs for this trial (``trainers.train_loop.train_trial``), but its attempt and group."""
    run_dir = f"{config['storage_path']}/{run_name(config, trial_id)}"
    return {
        "params": config["params"],
        "trial_started_at": started_at,
        "run_dir": run_dir,  # the trial's own directory in Ray Train's storage, whichever run trains it
        "fault_marker_dir": f"{run_dir}/faults",
        "sweep": config["sweep"],
        "trial_id": trial_id,
        "collective_timeout_s": config["collective_timeout_s"],
    }


def run_name(config: dict, trial_id: str) -> str:
    return f"{config['sweep']}-{trial_id}"


def run_alone(config: dict, trial: dict) -> None:
    """The trial as a Ray Train run of its own.

    A worker group that fails (a rank killed, a collective timed out) is started again, up to
    ``max_failures`` times; the new group resumes from the run's latest checkpoint, since a
    Ray Train run of the same name and storage continues where it stopped.  Out of memory is
    not retried: it would fail the same way.
    """
    from trainers.train_loop import train_fn_per_worker

    name = run_name(config, trial["trial_id"])
    for attempt in range(config["max_failures"] + 1):
        trainer = torch_trainer(
            TrialParams.from_dict(config["params"]),
            train_fn_per_worker,
            {**trial, "attempt": attempt, "worker_group": name},
            name,
            config["storage_path"],
            config["collective_timeout_s"],
            callbacks=[TuneReportCallback()],
        )
        try:
            trainer.fit()
            return
        except TrainingFailedError as e:
            if attempt == config["max_failures"] or is_out_of_memory(str(e)):
                raise


def finished_before(config: dict, trial_id: str) -> bool:
    """A resumed sweep can restart a trial that completed after Tune's last experiment checkpoint.

    Its row says so; where the sweep's directory is visible from here (a local run) the
    trial is not run twice.  Elsewhere it runs again and the recorder keeps the first row.
    """
    sweep_dir = Path(config["sweep_dir"])
    store = ResultStore(sweep_dir.parent, sweep_dir.name)
    return store.is_completed(trial_id)
