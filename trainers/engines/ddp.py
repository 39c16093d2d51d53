"""Plain PyTorch DDP (Ray Train's ``prepare_model``) with torch autocast and, for fp16, a GradScaler.

Under tensor parallelism (a ``TensorParallelViT``) the gradient mean runs over the data-parallel sub-mesh
only, at the accumulation boundary (``trainers.engines.tensor_parallel_grads``): torch's DDP
takes no DTensor parameters, and its mean over every rank would mix different ranks' shards."""

from __future__ import annotations

from collections.abc import Callable
from contextlib import nullcontext
from pathlib import Path

import torch

from raysweep.core.params import TrialParams
from trainers.engines.accumulation import Accumulation
from trainers.engines.compiling import compiled
from trainers.engines.tensor_parallel_grads import average_gradients, clip_grad_norm, tensor_parallel_layout

DTYPES = {"fp32": torch.float32, "bf16": torch.bfloat16, "fp16": torch.float16}
STATE = "ddp.pt"


class DDPEngine:
    """Data parallelism with DeepSpeed's accumulation rules: sync at the boundary only, then clip and step."""

    def __init__(
        self,
        params: TrialParams,
        model: torch.nn.Module,
        device: torch.device,
        make_optimizer: Callable[[torch.nn.Module], torch.optim.Optimizer],
        make_scheduler: Callable[[torch.optim.Optimizer], torch.optim.lr_scheduler.LRScheduler],
    ):
        import ray.train.torch

        model = model.to(device)
        optimizer = make_optimizer(model)
        self.tensor_parallel = tensor_parallel_layout(model)
        self.ddp = model if self.tensor_parallel else ray.train.torch.prepare_model(model)
        self.module = compiled(self.ddp, params)
        autocast_dtype = DTYPES[params.precision]
        self.autocast = (
            torch.autocast(device.type, dtype=autocast_dtype) if autocast_dtype != torch.float32 else nullcontext()
        )
        scaler = torch.amp.GradScaler(device.type) if params.precision == "fp16" else None
        self.accumulation = Accumulation(
            params.grad_accum_steps,
            self.ddp,
            optimizer,
            make_scheduler(optimizer),
            scaler,
            foreach=True,
            clip=clip_grad_norm if self.tensor_parallel else None,
        )
        # Weights stay fp32 under autocast, so inputs and gradients (and their all-reduce) are fp32.
        self.input_dtype = torch.float32

    def __call__(self, x: torch.Tensor) -> torch.Tensor:
        with self.autocast:
            return self.module(x)

    def backward(self, loss: torch.Tensor) -> None:
        # One rank: prepare_model returns the bare model, which has no no_sync (and needs none).
        distributed = isinstance(self.ddp, torch.nn.parallel.DistributedDataParallel)
        with self.ddp.no_sync() if distributed and not self.accumulation.at_boundary() else nullcontext():
            self.accumulation.scaled(loss).backward()

    def step(self) -> None:
        if self.tensor_parallel and self.accumulation.at_boundary():
            average_gradients(self.ddp, self.tensor_parallel.dp_group, self.tensor_parallel.dp_size)
        self.accumulation.step()

    def train(self) -> None:
        self.module.train()

    def eval(self) -> None:
        self.module.eval()

    def bare_model(self) -> torch.nn.Module:
        return self.ddp.module if isinstance(self.ddp, torch.nn.parallel.DistributedDataParallel) else self.ddp

    def state_file(self) -> str:
        """Under TP each TP rank holds its own shards: one file per TP rank, else one for all."""
        return f"ddp_tp{self.tensor_parallel.tp_rank}.pt" if self.tensor_parallel else STATE

    def save(self, directory: Path, rank: int) -> None:
        """The first data-parallel replica writes the state: every replica holds the same weights and optimizer
        state (its TP ranks their own shards)."""
        first_replica = self.tensor_parallel.dp_rank == 0 if self.tensor_parallel else rank == 0
        if first_replica:
            torch.save(self.accumulation.replicated_state(self.bare_model()), Path(directory) / self.state_file())

    def load(self, directory: Path) -> None:
        state = torch.load(Path(directory) / self.state_file(), map_location="cpu", weights_only=False)
        self.accumulation.load_replicated_state(self.bare_model(), state)

    def close(self) -> None:
        """Nothing outlives the trial's references to the engine: torch's hooks die with its model."""
