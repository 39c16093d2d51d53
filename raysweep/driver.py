"""The Tune function trainable of one trial: it builds and runs the trial's Ray Train run."""

from __future__ import annotations

import time
from pathlib import Path

import ray.tune
from ray.train import LoggingConfig, RunConfig, ScalingConfig, TrainingFailedError
from ray.train.torch import TorchConfig, TorchTrainer
from ray.tune.integration.ray_train import TuneReportCallback

from raysweep.errors import is_out_of_memory
from raysweep.params import TrialParams
from raysweep.store import ResultStore
from trainers.train_loop import train_fn_per_worker


def train_driver_fn(config: dict) -> None:
    """Run one trial: ``num_workers`` ranks in one placement group, metrics passed back to Tune.

    A worker group that fails (a rank killed, a collective timed out) is started again, up to
    ``max_failures`` times; the new group resumes from the run's latest checkpoint, since a
    Ray Train run of the same name and storage continues where it stopped.  Out of memory is
    not retried: it would fail the same way.
    """
    started_at = time.time()
    trial_id = ray.tune.get_context().get_trial_id()
    if finished_before(config, trial_id):
        return
    for attempt in range(config["max_failures"] + 1):
        try:
            build_trainer(config, trial_id, started_at, attempt).fit()
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


def build_trainer(config: dict, trial_id: str, started_at: float, attempt: int) -> TorchTrainer:
    params = TrialParams.from_dict(config["params"])
    gpu = params.device == "gpu"
    run_name = f"{config['sweep']}-{trial_id}"
    return TorchTrainer(
        train_fn_per_worker,
        train_loop_config={
            "params": config["params"],
            "trial_started_at": started_at,
            "attempt": attempt,
            "fault_marker_dir": f"{config['storage_path']}/{run_name}/faults",
            "sweep": config["sweep"],
            "trial_id": trial_id,
            "collective_timeout_s": config["collective_timeout_s"],
        },
        torch_config=TorchConfig(backend="nccl" if gpu else "gloo", timeout_s=config["collective_timeout_s"]),
        scaling_config=ScalingConfig(
            num_workers=params.num_workers,
            use_gpu=gpu,
            resources_per_worker={"CPU": params.cpus_per_worker, **({"GPU": 1} if gpu else {})},
            placement_strategy=params.placement_strategy,
        ),
        run_config=RunConfig(
            name=run_name,
            storage_path=config["storage_path"],
            callbacks=[TuneReportCallback()],
            worker_runtime_env={"env_vars": worker_env(params)},
            # Ray Train's INFO lines (resources requested, worker group started, process group set up)
            # go to its log files only; its warnings and errors still reach the screen.
            logging_config=LoggingConfig(log_level="WARNING"),
        ),
    )


def worker_env(params: TrialParams) -> dict[str, str]:
    """DeepSpeed picks its accelerator from the environment; on CPU it must be told."""
    return {"DS_ACCELERATOR": "cuda"} if params.device == "gpu" else {"DS_ACCELERATOR": "cpu"}
