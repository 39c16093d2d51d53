"""Plain PyTorch DDP (Ray Train's ``prepare_model``) with torch autocast and, for fp16, a GradScaler."""

from __future__ import annotations

from collections.abc import Callable
from contextlib import nullcontext
from pathlib import Path

import torch

from raysweep.core.params import TrialParams
from trainers.deepspeed_config import GRAD_CLIP_NORM
from trainers.engines.compiling import compiled

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
        self.optimizer = make_optimizer(model)
        self.scheduler = make_scheduler(self.optimizer)
        self.ddp = ray.train.torch.prepare_model(model)
        self.module = compiled(self.ddp, params)
        self.accum = params.grad_accum_steps
        self.micro_steps = 0
        autocast_dtype = DTYPES[params.precision]
        self.autocast = (
            torch.autocast(device.type, dtype=autocast_dtype) if autocast_dtype != torch.float32 else nullcontext()
        )
        self.scaler = torch.amp.GradScaler(device.type) if params.precision == "fp16" else None
        # Weights stay fp32 under autocast, so inputs and gradients (and their all-reduce) are fp32.
        self.input_dtype = torch.float32

    def __call__(self, x: torch.Tensor) -> torch.Tensor:
        with self.autocast:
            return self.module(x)

    def is_gradient_accumulation_boundary(self) -> bool:
        return (self.micro_steps + 1) % self.accum == 0

    def backward(self, loss: torch.Tensor) -> None:
        loss = loss / self.accum
        if self.scaler is not None:
            loss = self.scaler.scale(loss)
        # One rank: prepare_model returns the bare model, which has no no_sync (and needs none).
        distributed = isinstance(self.ddp, torch.nn.parallel.DistributedDataParallel)
        with self.ddp.no_sync() if distributed and not self.is_gradient_accumulation_boundary() else nullcontext():
            loss.backward()

    def step(self) -> None:
        if self.is_gradient_accumulation_boundary():
            # Clip the true (unscaled) gradients at the global norm DeepSpeed clips at.
            if self.scaler is not None:
                self.scaler.unscale_(self.optimizer)
            torch.nn.utils.clip_grad_norm_(self.ddp.parameters(), GRAD_CLIP_NORM, foreach=True)
            if self.scaler is not None:
                self.scaler.step(self.optimizer)
                self.scaler.update()
            else:
                self.optimizer.step()
            self.scheduler.step()
            self.optimizer.zero_grad(set_to_none=True)
        self.micro_steps += 1

    def train(self) -> None:
        self.module.train()

    def eval(self) -> None:
        self.module.eval()

    def bare_model(self) -> torch.nn.Module:
        return self.ddp.module if isinstance(self.ddp, torch.nn.parallel.DistributedDataParallel) else self.ddp

    def save(self, directory: Path, rank: int) -> None:
        """Rank 0 writes the replicated state: every rank holds the same weights and optimizer state."""
        if rank != 0:
            return
        state = {
            "model": self.bare_model().state_dict(),
            "optimizer": self.optimizer.state_dict(),
            "scheduler": self.scheduler.state_dict(),
            "scaler": self.scaler.state_dict() if self.scaler is not None else None,
            "micro_steps": self.micro_steps,
        }
        torch.save(state, Path(directory) / STATE)

    def load(self, directory: Path) -> None:
        state = torch.load(Path(directory) / STATE, map_location="cpu", weights_only=False)
        self.bare_model().load_state_dict(state["model"])
        self.optimizer.load_state_dict(state["optimizer"])
        self.scheduler.load_state_dict(state["scheduler"])
        if self.scaler is not None:
            self.scaler.load_state_dict(state["scaler"])
        self.micro_steps = state["micro_steps"]
