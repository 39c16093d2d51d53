"""Known answers of the accumulation DDP and FSDP2 share: the optimizer and the schedule step once per
``accum`` micro batches, on the mean loss's gradients, clipped at GRAD_CLIP_NORM."""

from __future__ import annotations

import pytest
import torch

from trainers.engines.accumulation import Accumulation
from trainers.engines.deepspeed_config import GRAD_CLIP_NORM


def one_weight(accum: int) -> tuple[torch.nn.Linear, Accumulation]:
    """A single weight w (no bias), SGD with lr 1 and a constant schedule: w moves by minus its gradient."""
    model = torch.nn.Linear(1, 1, bias=False)
    torch.nn.init.zeros_(model.weight)
    optimizer = torch.optim.SGD(model.parameters(), lr=1.0)
    scheduler = torch.optim.lr_scheduler.LambdaLR(optimizer, lambda step: 1.0)
    return model, Accumulation(accum, model, optimizer, scheduler)


def micro_batch(model: torch.nn.Linear, steps: Accumulation, x: float) -> None:
    """Loss w * x: its gradient is x."""
    loss = model(torch.tensor([[x]])).sum()
    steps.scaled(loss).backward()
    steps.step()


def test_the_optimizer_steps_once_per_accum_micro_batches_on_the_mean_gradient():
    model, steps = one_weight(accum=2)
    assert steps.at_boundary() is False
    micro_batch(model, steps, 0.2)
    assert model.weight.item() == 0.0  # between boundaries nothing moves
    assert steps.at_boundary() is True
    micro_batch(model, steps, 0.4)
    assert model.weight.item() == pytest.approx(-0.3)  # the mean of 0.2 and 0.4
    assert model.weight.grad is None  # dropped after the step
    assert (steps.micro_steps, steps.scheduler.last_epoch) == (2, 1)


def test_the_gradient_is_clipped_at_the_global_norm():
    model, steps = one_weight(accum=1)
    micro_batch(model, steps, 10 * GRAD_CLIP_NORM)
    assert model.weight.item() == pytest.approx(-GRAD_CLIP_NORM)
