"""Hugging Face Accelerate's ``Accelerator`` (its DDP path) with the engine interface of DeepSpeed, DDP and FSDP2.

Ray Train has made the process group when the engine starts; Accelerate finds it and wraps the model in
DDP itself (``prepare``), and its mixed precision is torch autocast over fp32 weights (bf16), with its
GradScaler for fp16. The updates are the other engines': gradients synchronised at the accumulation
boundary only, clipped at the global norm ``GRAD_CLIP_NORM``, one optimizer and one schedule step per
boundary. The schedule stays ours (not ``prepare``d): Accelerate's scheduler wrapper steps once per
process per optimizer step, which would run the schedule ``world_size`` times faster than the others'.

Accelerate's DeepSpeed and FSDP plugins are not offered. Each hands the model to the engine that
``engine=deepspeed`` or ``engine=fsdp`` already runs, and neither can run where the engines are checked
against each other, on CPU ranks: Accelerate puts CPU ranks on DDP whatever FSDP plugin it is given (its FSDP
is for accelerator devices only), and its DeepSpeed plugin imports transformers' ``HfDeepSpeedConfig``, a
dependency raysweep does not have.
"""

from __future__ import annotations

from collections.abc import Callable
from contextlib import nullcontext
from pathlib import Path

import torch

from raysweep.core.params import TrialParams
from trainers.engines.accumulation import Accumulation
from trainers.engines.compiling import compiled

STATE = "accelerate.pt"
MIXED_PRECISION = {"fp32": "no", "bf16": "bf16", "fp16": "fp16"}


class AccelerateEngine:
    """``engine(x)``, ``engine.backward(loss)``, ``engine.step()`` per micro batch through an ``Accelerator``."""

    def __init__(
        self,
        params: TrialParams,
        model: torch.nn.Module,
        device: torch.device,
        make_optimizer: Callable[[torch.nn.Module], torch.optim.Optimizer],
        make_scheduler: Callable[[torch.optim.Optimizer], torch.optim.lr_scheduler.LRScheduler],
    ):
        from accelerate import Accelerator
        from accelerate.state import AcceleratorState

        # The Accelerator's state is process-wide; a worker group's later trial may ask for another precision.
        AcceleratorState._reset_state()
        self.accelerator = Accelerator(mixed_precision=MIXED_PRECISION[params.precision], cpu=device.type == "cpu")
        model = model.to(self.accelerator.device)
        self.ddp, optimizer = self.accelerator.prepare(model, make_optimizer(model))
        self.module = compiled(self.ddp, params)
        # Accelerate's optimizer wrapper steps through its GradScaler (fp16) and skips an overflowed step's
        # update; the schedule is ours, stepped once per update.
        self.accumulation = Accumulation(
            params.grad_accum_steps, self.ddp, optimizer, make_scheduler(optimizer.optimizer), foreach=True
        )
        # Weights stay fp32 under autocast, so inputs and gradients (and their all-reduce) are fp32.
        self.input_dtype = torch.float32

    def __call__(self, x: torch.Tensor) -> torch.Tensor:
        return self.module(x)

    def backward(self, loss: torch.Tensor) -> None:
        boundary = self.accumulation.at_boundary()
        with nullcontext() if boundary else self.accelerator.no_sync(self.ddp):
            # Accelerate scales an fp16 loss itself (its GradScaler) and unscales before the optimizer steps.
            self.accelerator.backward(self.accumulation.scaled(loss))

    def step(self) -> None:
        if self.accumulation.at_boundary():
            self.accelerator.unscale_gradients()  # the true gradients are clipped, as in DDP
        self.accumulation.step()

    def train(self) -> None:
        self.module.train()

    def eval(self) -> None:
        self.module.eval()

    def save(self, directory: Path, rank: int) -> None:
        """Rank 0 writes the replicated state: every rank holds the same weights and optimizer state."""
        if rank == 0:
            state = self.accumulation.replicated_state(self.accelerator.unwrap_model(self.ddp))
            torch.save({**state, "scaler": scaler_state(self.accelerator)}, Path(directory) / STATE)

    def load(self, directory: Path) -> None:
        state = torch.load(Path(directory) / STATE, map_location="cpu", weights_only=False)
        self.accumulation.load_replicated_state(self.accelerator.unwrap_model(self.ddp), state)
        if self.accelerator.scaler is not None:
            self.accelerator.scaler.load_state_dict(state["scaler"])

    def close(self) -> None:
        """Nothing outlives the trial's references to the engine: torch's hooks die with its model."""


def scaler_state(accelerator) -> dict | None:
    return accelerator.scaler.state_dict() if accelerator.scaler is not None else None
