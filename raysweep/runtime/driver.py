"""The Tune function trainable of one trial: it runs the trial's ranks through Ray Train.

By default the trial runs in a worker group it shares with the sweep's other trials of its shape
(``raysweep.runtime.worker_groups``); with ``share_workers`` off it is a Ray Train run of its own.
"""

from __future__ import annotations

import itertools
import time
from pathlib import Path

import ray.tune
from ray.train import TrainingFailedError
from ray.tune.integration.ray_train import TuneReportCallback

from raysweep.core.compile_decision import CompileCost, measured_cost
from raysweep.core.errors import DataFileError
from raysweep.core.spec import RANK_TRIAL_KEY, RankTrial, TrialSpec, spec_of
from raysweep.core.store import ResultStore
from raysweep.runtime.failures import find_error
from raysweep.runtime.retry import retried
from raysweep.runtime.stop_requests import stop_for
from raysweep.runtime.train_run import torch_trainer
from raysweep.runtime.worker_groups import run_in_group


def train_driver_fn(config: dict) -> None:
    """Run one trial: ``num_workers`` ranks in one placement group, metrics passed back to Tune."""
    started_at = time.time()
    spec = spec_of(config)
    trial_id = ray.tune.get_context().get_trial_id()
    if finished_before(spec, trial_id):
        return
    trial = RankTrial(
        spec, trial_id, started_at, run_dir=spec.run_dir(trial_id), compile_cost=measured_compile_cost(spec)
    )
    try:
        if spec.share_workers:
            run_in_group(trial)
        else:
            run_alone(trial)
    except Exception as e:
        data_error = find_error(e, DataFileError)
        # every trial would meet the file: the sweep stops, and this trial runs again on --resume
        if data_error is not None and stop_for(spec.sweep, trial_id, data_error):
            raise SystemExit(0) from None  # as ray.tune.report does for a stopped trial
        raise


def run_alone(trial: RankTrial) -> None:
    """The trial as a Ray Train run of its own.

    A worker group that fails (a rank killed, a collective timed out) is started again as
    ``retried`` says; the new group resumes from the run's latest checkpoint, since a Ray Train
    run of the same name and storage continues where it stopped.
    """
    from trainers.train_loop import train_fn_per_worker

    spec = trial.spec
    name = spec.run_name(trial.trial_id)
    for attempt in itertools.count():
        trainer = torch_trainer(
            spec.params,
            train_fn_per_worker,
            {RANK_TRIAL_KEY: trial.attempted(attempt, name)},
            name,
            spec.storage_path,
            spec.collective_timeout_s,
            callbacks=[TuneReportCallback()],
        )
        try:
            trainer.fit()
            return
        except TrainingFailedError as e:
            if not retried(e, attempt, spec.max_failures):
                raise


def measured_compile_cost(spec: TrialSpec) -> CompileCost | None:
    """For ``compile=auto`` on a GPU: the compile's cost and gain measured by the sweep's earlier trials of the
    trial's shape, where the sweep's tables are visible from here (a local run); None elsewhere."""
    if spec.params.compile != "auto" or spec.params.device != "gpu":
        return None
    sweep_dir = Path(spec.sweep_dir)
    return measured_cost(ResultStore(sweep_dir.parent, sweep_dir.name).read("trials").to_pylist(), spec.params)


def finished_before(spec: TrialSpec, trial_id: str) -> bool:
    """A resumed sweep can restart a trial that completed (or was stopped) after Tune's last experiment checkpoint.

    Its row says so; where the sweep's directory is visible from here (a local run) the
    trial is not run twice.  Elsewhere it runs again and the recorder keeps the first row.
    """
    sweep_dir = Path(spec.sweep_dir)
    store = ResultStore(sweep_dir.parent, sweep_dir.name)
    return store.is_finished(trial_id)
