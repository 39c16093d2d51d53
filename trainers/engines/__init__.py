"""Training engines behind one interface, chosen by ``params.engine`` from ``ENGINES``.

An engine wraps the model and owns what differs between DeepSpeed, DDP and FSDP2: construction,
mixed precision, gradient accumulation and clipping (to ``GRAD_CLIP_NORM``), the optimizer and LR
schedule steps (DDP and FSDP2 share ``accumulation.Accumulation``; megatron-core steps its own), and
checkpoints. The training loop sees only ``Engine``. ``build_engine`` makes the optimizer and schedule
factories and hands them to the engine, which calls them when its model is ready (FSDP2 shards first, then builds its
optimizer over the shards).
"""

from __future__ import annotations

import math
from collections.abc import Callable
from pathlib import Path
from typing import Protocol

import torch

from raysweep.core.params import TrialParams
from trainers.engines.accelerate import AccelerateEngine
from trainers.engines.ddp import DTYPES, DDPEngine
from trainers.engines.deepspeed import DeepSpeedEngine
from trainers.engines.fsdp import FSDPEngine
from trainers.engines.megatron import MegatronEngine

OptimizerFactory = Callable[[torch.nn.Module], torch.optim.Optimizer]
SchedulerFactory = Callable[[torch.optim.Optimizer], torch.optim.lr_scheduler.LRScheduler]


class Engine(Protocol):
    module: torch.nn.Module  # the wrapped model
    input_dtype: torch.dtype  # what the inputs should be

    def __call__(self, x: torch.Tensor) -> torch.Tensor: ...
    def backward(self, loss: torch.Tensor) -> None: ...
    def step(self) -> None: ...  # every micro batch; optimizer and schedule at the accumulation boundary
    def train(self) -> None: ...
    def eval(self) -> None: ...
    def save(self, directory: Path, rank: int) -> None: ...
    def load(self, directory: Path) -> None: ...
    def close(self) -> None: ...  # at the trial's end: release what would keep the model alive after it


EngineFactory = Callable[[TrialParams, torch.nn.Module, torch.device, OptimizerFactory, SchedulerFactory], Engine]

__all__ = ["DTYPES", "ENGINES", "Engine", "build_engine", "build_optimizer", "lr_factor"]

ENGINES: dict[str, EngineFactory] = {
    "deepspeed": DeepSpeedEngine,
    "ddp": DDPEngine,
    "fsdp": FSDPEngine,
    "accelerate": AccelerateEngine,
    "megatron": MegatronEngine,
}


def build_engine(params: TrialParams, model: torch.nn.Module, device: torch.device, total_steps: int) -> Engine:
    """The trial's engine around ``model``; ``total_steps`` optimizer steps span the LR schedule."""

    def make_optimizer(module: torch.nn.Module) -> torch.optim.Optimizer:
        return build_optimizer(params, module, device)

    def make_scheduler(optimizer: torch.optim.Optimizer) -> torch.optim.lr_scheduler.LRScheduler:
        return torch.optim.lr_scheduler.LambdaLR(
            optimizer, lambda step: lr_factor(step, total_steps, params.lr_warmup, params.lr_schedule)
        )

    return ENGINES[params.engine](params, model, device, make_optimizer, make_scheduler)


def build_optimizer(params: TrialParams, model: torch.nn.Module, device: torch.device) -> torch.optim.Optimizer:
    from timm.optim import create_optimizer_v2

    extra = {"momentum": 0.9} if params.optimizer == "sgd" else {}
    if params.tensor_parallel > 1:
        # torch's foreach and fused kernels take a list of one kind: all DTensors or all tensors, and TP
        # leaves the embeddings, norms and head plain tensors beside the sharded DTensors.
        extra["foreach"] = False
    elif params.optimizer == "adamw" and device.type == "cuda":
        extra["fused"] = True
    return create_optimizer_v2(
        model, params.optimizer, lr=params.learning_rate, weight_decay=params.weight_decay, **extra
    )


def lr_factor(step: int, total_steps: int, warmup_share: float, schedule: str) -> float:
    """The learning rate of optimizer step ``step`` (from 0) as a share of the peak.

    Linear warm-up over the first ``warmup_share x total_steps`` steps (step 0 already at
    1/warm-up of the peak, so no step is wasted at 0), then constant or a cosine to 0 at ``total_steps``.
    """
    warmup = round(warmup_share * total_steps)
    if step < warmup:
        return (step + 1) / warmup
    if schedule == "constant":
        return 1.0
    progress = min(1.0, (step - warmup) / max(1, total_steps - warmup))
    return 0.5 * (1.0 + math.cos(math.pi * progress))
