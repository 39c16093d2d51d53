"""The Ray Train run that holds a trial's ranks: its shape (ranks, device, CPUs, placement) as a ``TorchTrainer``."""

from __future__ import annotations

import functools
import importlib
import threading
from collections.abc import Callable
from typing import TYPE_CHECKING

import ray
from ray.train import LoggingConfig, RunConfig, ScalingConfig

from raysweep.core.params import TrialParams
from raysweep.runtime.torch_backend import TorchBackendConfig

if TYPE_CHECKING:
    from ray.train.torch import TorchTrainer

# What a worker group is made of: trials equal in these can run in the same group's processes.
SHAPE_FIELDS = ("num_workers", "device", "cpus_per_worker", "placement_strategy")


def shape_of(params: TrialParams) -> tuple:
    return tuple(getattr(params, name) for name in SHAPE_FIELDS)


def torch_trainer(
    params: TrialParams,
    train_fn: Callable[[dict], None],
    loop_config: dict,
    run_name: str,
    storage_path: str,
    collective_timeout_s: int,
    callbacks: list,
) -> TorchTrainer:
    """A Train run of ``train_fn`` on ``params``'s shape (only the fields in ``SHAPE_FIELDS`` are read)."""
    gpu = params.device == "gpu"
    return trainer_without_datasets()(
        train_fn,
        train_loop_config=loop_config,
        # not Ray's TorchConfig: its module imports torch in every run's controller (raysweep.runtime.torch_backend)
        torch_config=TorchBackendConfig(backend="nccl" if gpu else "gloo", timeout_s=collective_timeout_s),
        scaling_config=ScalingConfig(
            num_workers=params.num_workers,
            use_gpu=gpu,
            resources_per_worker={"CPU": params.cpus_per_worker, **({"GPU": 1} if gpu else {})},
            placement_strategy=params.placement_strategy,
        ),
        run_config=RunConfig(
            name=run_name,
            storage_path=storage_path,
            callbacks=callbacks,
            worker_runtime_env={"env_vars": worker_env(params)},
            # Ray Train's INFO lines (resources requested, worker group started, process group set up)
            # go to its log files only; its warnings and errors still reach the screen.
            logging_config=LoggingConfig(log_level="WARNING"),
        ),
    )


@functools.cache
def trainer_without_datasets() -> type[TorchTrainer]:
    """Ray Train's ``TorchTrainer``, less the one thing of Ray Data a run without datasets does not use.

    Ray Train's ``DatasetsCallback`` starts a ``DatasetManager`` actor for every worker group, datasets or none:
    one more process on each group's start, importing Ray Data. raysweep's ranks read their own data and pass
    Ray no datasets, so its runs go without it. Made on first use: ``ray.train.torch`` imports torch, seconds
    that the sweep's own process and the pool need not spend before a run.
    """
    from ray.train.torch import TorchTrainer
    from ray.train.v2._internal.callbacks.datasets import DatasetsCallback

    class TorchTrainerWithoutDatasets(TorchTrainer):
        def _create_default_callbacks(self) -> list:
            callbacks = super()._create_default_callbacks()
            if self.datasets:
                return callbacks
            return [callback for callback in callbacks if not isinstance(callback, DatasetsCallback)]

    return TorchTrainerWithoutDatasets


def worker_env(params: TrialParams) -> dict[str, str]:
    """DeepSpeed picks its accelerator from the environment; on CPU it must be told."""
    return {"DS_ACCELERATOR": "cuda"} if params.device == "gpu" else {"DS_ACCELERATOR": "cpu"}


def import_train_torch_in_background() -> threading.Thread:
    """Import ``ray.train.torch`` (and so torch) on a thread: call it just before ``ray.init``.

    The first group's ``TorchTrainer`` is made in this process as soon as Ray is up; its import (seconds)
    would come first on that group's critical path.  ``ray.init`` mostly waits for the
    processes it starts, so an import beside it costs little; the trainer's own import then finds the
    module loaded (or waits for it: Python's import lock).
    """
    thread = threading.Thread(
        target=importlib.import_module, args=("ray.train.torch",), name="import-ray-train-torch", daemon=True
    )
    thread.start()
    return thread


def start_train_coordinator() -> ray.actor.ActorHandle:
    """Start Ray Train's autoscaling coordinator now, so that the sweep's first Train run finds it running.

    Every Train run's controller, as it starts, asks this cluster-wide actor for its resources and waits
    for the answer (``ScalingPolicy.after_controller_start``).  The first run on a cluster otherwise
    creates it there, on its critical path: a process start and ray.data's imports (a second or more on 2 CPU
    cores).  The same named actor, got if it exists, is what Ray Train asks for.
    """
    from ray.data._internal.cluster_autoscaler.default_autoscaling_coordinator import (
        get_or_create_autoscaling_coordinator,
    )

    return get_or_create_autoscaling_coordinator()
