"""Training engines with one interface: ``engine(x)``, ``engine.backward(loss)``, ``engine.step()``.

DeepSpeed's engine already has it; ``DDPEngine`` gives plain PyTorch DDP (Ray Train's
``prepare_model``) the same shape, so the training loop is the same for both.
"""

from __future__ import annotations

from contextlib import nullcontext

import torch

from raysweep.params import TrialParams
from trainers.deepspeed_config import GRAD_CLIP_NORM, build_deepspeed_config

DTYPES = {"fp32": torch.float32, "bf16": torch.bfloat16, "fp16": torch.float16}


def build_optimizer(params: TrialParams, model: torch.nn.Module, device: torch.device) -> torch.optim.Optimizer:
    from timm.optim import create_optimizer_v2

    extra = {"momentum": 0.9} if params.optimizer == "sgd" else {}
    if params.optimizer == "adamw" and device.type == "cuda":
        extra["fused"] = True
    return create_optimizer_v2(
        model, params.optimizer, lr=params.learning_rate, weight_decay=params.weight_decay, **extra
    )


class DDPEngine:
    """Plain PyTorch data parallelism with DeepSpeed's engine interface and accumulation rules."""

    def __init__(
        self, model: torch.nn.Module, optimizer: torch.optim.Optimizer, params: TrialParams, device: torch.device
    ):
        import ray.train.torch

        self.module = ray.train.torch.prepare_model(model)
        self.optimizer = optimizer
        self.accum = params.grad_accum_steps
        self.micro_steps = 0
        autocast_dtype = DTYPES[params.precision]
        self.autocast = (
            torch.autocast(device.type, dtype=autocast_dtype) if autocast_dtype != torch.float32 else nullcontext()
        )
        self.scaler = torch.amp.GradScaler(device.type) if params.precision == "fp16" else None
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
        sync = self.is_gradient_accumulation_boundary() or not hasattr(self.module, "no_sync")
        with nullcontext() if sync else self.module.no_sync():
            loss.backward()

    def step(self) -> None:
        if self.is_gradient_accumulation_boundary():
            # Clip the true (unscaled) gradients at the global norm DeepSpeed clips at.
            if self.scaler is not None:
                self.scaler.unscale_(self.optimizer)
            torch.nn.utils.clip_grad_norm_(self.module.parameters(), GRAD_CLIP_NORM)
            if self.scaler is not None:
                self.scaler.step(self.optimizer)
                self.scaler.update()
            else:
                self.optimizer.step()
            self.optimizer.zero_grad(set_to_none=True)
        self.micro_steps += 1

    def train(self) -> None:
        self.module.train()

    def eval(self) -> None:
        self.module.eval()


def build_engine(params: TrialParams, model: torch.nn.Module, device: torch.device):
    """A DeepSpeed engine (or a DDP one) around the model; ``engine.input_dtype`` is what it eats."""
    model = model.to(device)
    optimizer = build_optimizer(params, model, device)
    if params.engine == "ddp":
        engine = DDPEngine(model, optimizer, params, device)
        if params.compile:
            engine.module = torch.compile(engine.module)
        return engine

    import deepspeed

    engine, *_ = deepspeed.initialize(model=model, optimizer=optimizer, config=build_deepspeed_config(params))
    # Without ZeRO or DeepSpeed's low-precision engine, DeepSpeed clips gradients with a helper that
    # copies two host scalars to the device every step, and each copy waits for the whole queue of
    # kernels. torch's foreach clipping computes the same norm and scale on the device alone.
    engine.clip_fp32_gradients = lambda: torch.nn.utils.clip_grad_norm_(
        engine.module.parameters(), engine.gradient_clipping(), foreach=True
    )
    if params.compile:
        engine.compile()
    engine.input_dtype = torch.float32 if params.uses_autocast else DTYPES[params.precision]
    return engine
