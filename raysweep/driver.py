"""The Tune function trainable of one trial: it builds and runs the trial's Ray Train run."""

from __future__ import annotations

import time

import ray.tune
from ray.train import FailureConfig, RunConfig, ScalingConfig
from ray.train.torch import TorchConfig, TorchTrainer
from ray.tune.integration.ray_train import TuneReportCallback

from raysweep.params import TrialParams
from trainers.train_loop import train_fn_per_worker


def train_driver_fn(config: dict) -> None:
    """Run one trial: ``num_workers`` ranks in one placement group, metrics passed back to Tune."""
    started_at = time.time()
    params = TrialParams.from_dict(config["params"])
    gpu = params.device == "gpu"
    trial_id = ray.tune.get_context().get_trial_id()
    trainer = TorchTrainer(
        train_fn_per_worker,
        train_loop_config={"params": config["params"], "trial_started_at": started_at},
        torch_config=TorchConfig(backend="nccl" if gpu else "gloo", timeout_s=config["collective_timeout_s"]),
        scaling_config=ScalingConfig(
            num_workers=params.num_workers,
            use_gpu=gpu,
            resources_per_worker={"CPU": params.cpus_per_worker, **({"GPU": 1} if gpu else {})},
            placement_strategy=params.placement_strategy,
        ),
        run_config=RunConfig(
            name=f"{config['sweep']}-{trial_id}",
            storage_path=config["storage_path"],
            callbacks=[TuneReportCallback()],
            failure_config=FailureConfig(max_failures=config["max_failures"]),
            worker_runtime_env={"env_vars": worker_env(params)},
        ),
    )
    trainer.fit()


def worker_env(params: TrialParams) -> dict[str, str]:
    """DeepSpeed picks its accelerator from the environment; on CPU it must be told."""
    return {"DS_ACCELERATOR": "cuda"} if params.device == "gpu" else {"DS_ACCELERATOR": "cpu"}
