"""Ray Train's torch backend with a controller that does not import torch.

A Train run's controller is a process of its own that starts before the run's workers and unpickles the
run's ``backend_config``.  Ray's ``TorchConfig`` lives in a module that imports torch (seconds in a fresh
process), so every controller imported torch before starting a worker: on the critical path of the
sweep's first trial.  ``TorchBackendConfig`` is that config
for what a sweep uses (the ``env://`` rendezvous, an explicit backend); the controller side only sends
functions to the ranks, and the functions it sends import Ray's torch set-up (``ray.train.torch.config``,
pinned with Ray) where they run, on the ranks, which import torch anyway.
"""

from __future__ import annotations

import logging
import os
from dataclasses import dataclass

import ray
from ray._private import ray_constants
from ray.exceptions import GetTimeoutError
from ray.train._internal.utils import get_address_and_port
from ray.train.backend import Backend, BackendConfig
from ray.train.constants import DEFAULT_TORCH_PROCESS_GROUP_SHUTDOWN_TIMEOUT_S, TORCH_PROCESS_GROUP_SHUTDOWN_TIMEOUT_S
from ray.train.v2._internal.util import TrainingFramework

logger = logging.getLogger(__name__)


@dataclass
class TorchBackendConfig(BackendConfig):
    """The process group of a Train run's ranks: ``backend`` ("nccl" or "gloo"), collectives' timeout."""

    backend: str
    timeout_s: int

    @property
    def backend_cls(self) -> type[Backend]:
        return TorchBackend

    @property
    def train_func_context(self):
        # Runs on the ranks (and where the trainer is built, which has torch): sets the rank's CUDA device
        from ray.train.torch.config import TorchConfigContextManager

        return TorchConfigContextManager

    @property
    def framework(self) -> TrainingFramework:
        return TrainingFramework.TORCH

    def to_dict(self) -> dict:
        return {"backend": self.backend, "init_method": "env", "timeout_s": self.timeout_s}


class TorchBackend(Backend):
    """What Ray's ``_TorchBackend`` does for the ``env://`` rendezvous, with torch imported on the ranks only."""

    share_cuda_visible_devices = True

    def on_start(self, worker_group, backend_config: TorchBackendConfig) -> None:
        address, port = worker_group.execute_single(0, get_address_and_port)
        worker_group.execute(set_rendezvous_env, address=address, port=port)
        worker_group.execute(set_torch_distributed_env)
        ray.get(
            [
                worker_group.execute_single_async(
                    rank,
                    setup_process_group,
                    backend=backend_config.backend,
                    world_rank=rank,
                    world_size=len(worker_group),
                    timeout_s=backend_config.timeout_s,
                )
                for rank in range(len(worker_group))
            ]
        )

    def on_shutdown(self, worker_group, backend_config: TorchBackendConfig) -> None:
        futures = worker_group.execute_async(shutdown_torch, destroy_process_group=len(worker_group) > 1)
        timeout_s = ray_constants.env_integer(
            TORCH_PROCESS_GROUP_SHUTDOWN_TIMEOUT_S, DEFAULT_TORCH_PROCESS_GROUP_SHUTDOWN_TIMEOUT_S
        )
        try:
            ray.get(futures, timeout=timeout_s)
        except GetTimeoutError:
            # as Ray's own: a rank stuck in its shutdown must not hold up the run's end
            logger.warning(f"Torch process group shutdown timed out after {timeout_s} seconds")


# The functions below run on the ranks.


def set_rendezvous_env(address: str, port: int) -> None:
    os.environ["MASTER_ADDR"] = address
    os.environ["MASTER_PORT"] = str(port)


def set_torch_distributed_env() -> None:
    from ray.train.torch.config import _set_torch_distributed_env_vars

    _set_torch_distributed_env_vars()


def setup_process_group(backend: str, world_rank: int, world_size: int, timeout_s: int) -> None:
    from ray.train.torch.config import _setup_torch_process_group

    _setup_torch_process_group(
        backend=backend, world_rank=world_rank, world_size=world_size, init_method="env://", timeout_s=timeout_s
    )


def shutdown_torch(destroy_process_group: bool) -> None:
    from ray.train.torch.config import _shutdown_torch

    _shutdown_torch(destroy_process_group=destroy_process_group)
