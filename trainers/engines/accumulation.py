"""DeepSpeed's gradient accumulation for the engines that hold a torch optimizer (DDP, FSDP2).

Each micro batch's loss is divided by the accumulation steps, so the gradients summed over a step
are those of the step's mean loss. At the boundary (every ``accum``-th micro batch) the gradients,
unscaled where a loss scaler runs, are clipped at their global norm to ``GRAD_CLIP_NORM`` as
DeepSpeed clips; then the optimizer and the LR schedule step once and the gradients are dropped.
The engine itself keeps what differs: when its gradients synchronise, and its checkpoint files.
"""

from __future__ import annotations

from collections.abc import Callable

import torch

from trainers.engines.deepspeed_config import GRAD_CLIP_NORM


class Accumulation:
    """``scaled(loss)`` before each micro batch's backward, ``step()`` after it."""

    def __init__(
        self,
        accum: int,
        model: torch.nn.Module,
        optimizer: torch.optim.Optimizer,
        scheduler: torch.optim.lr_scheduler.LRScheduler,
        scaler: torch.amp.GradScaler | None = None,
        foreach: bool | None = None,
        clip: Callable[..., torch.Tensor] | None = None,
    ):
        self.accum = accum
        self.model = model  # whose gradients are clipped
        self.optimizer = optimizer
        self.scheduler = scheduler
        self.scaler = scaler
        self.foreach = foreach  # torch's choice of clipping kernels; None lets torch pick
        self.micro_steps = 0  # micro batches stepped so far (a checkpoint keeps it)
        # the global-norm clip: torch's, or one that knows tensor-parallel shards (parameters, max norm)
        self.clip = clip

    def at_boundary(self) -> bool:
        """Whether the micro batch now running ends an optimizer step."""
        return (self.micro_steps + 1) % self.accum == 0

    def scaled(self, loss: torch.Tensor) -> torch.Tensor:
        loss = loss / self.accum
        return self.scaler.scale(loss) if self.scaler is not None else loss

    def step(self) -> None:
        if self.at_boundary():
            if self.scaler is not None:
                self.scaler.unscale_(self.optimizer)
            if self.clip is not None:
                self.clip(self.model.parameters(), GRAD_CLIP_NORM)
            else:
                torch.nn.utils.clip_grad_norm_(self.model.parameters(), GRAD_CLIP_NORM, foreach=self.foreach)
            if self.scaler is not None:
                self.scaler.step(self.optimizer)
                self.scaler.update()
            else:
                self.optimizer.step()
            self.scheduler.step()
            self.optimizer.zero_grad(set_to_none=True)
        self.micro_steps += 1

    def replicated_state(self, model: torch.nn.Module) -> dict:
        """What a replicated engine's checkpoint holds: every rank has the same weights and optimizer state."""
        return {
            "model": model.state_dict(),
            "optimizer": self.optimizer.state_dict(),
            "scheduler": self.scheduler.state_dict(),
            "scaler": self.scaler.state_dict() if self.scaler is not None else None,
            "micro_steps": self.micro_steps,
        }

    def load_replicated_state(self, model: torch.nn.Module, state: dict) -> None:
        model.load_state_dict(state["model"])
        self.optimizer.load_state_dict(state["optimizer"])
        self.scheduler.load_state_dict(state["scheduler"])
        if self.scaler is not None:
            self.scaler.load_state_dict(state["scaler"])
        self.micro_steps = state["micro_steps"]
