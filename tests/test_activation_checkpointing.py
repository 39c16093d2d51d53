"""Activation checkpointing: which blocks it checkpoints, that it changes no loss or gradient, that it keeps
less for the backward, and that parameter names stay as they were (the engines and checkpoints see one model).
The engines' runs with it: tests/test_engines.py (DeepSpeed ZeRO), tests/test_fsdp_engine.py (FSDP2, DDP),
tests/test_sequence_parallel.py (SP)."""

from __future__ import annotations

import pytest
import torch
import torch.nn.functional as F

from raysweep.core.errors import UsageError
from tests.test_sequence_parallel import saved_activation_bytes, tiny_batch, tiny_vit
from trainers.activation_checkpointing import CheckpointedForward, apply_activation_checkpointing


def loss_and_grads(model: torch.nn.Module) -> tuple[torch.Tensor, dict[str, torch.Tensor]]:
    x, y = tiny_batch()
    loss = F.cross_entropy(model(x), y)
    loss.backward()
    return loss.detach(), {name: p.grad for name, p in model.named_parameters()}


@pytest.mark.parametrize("every, checkpointed", [(1, [True, True]), (2, [True, False]), (0, [False, False])])
def test_every_kth_block_from_the_first(every, checkpointed):
    model = apply_activation_checkpointing(tiny_vit("cls"), every)
    assert [isinstance(b, CheckpointedForward) for b in model.blocks] == checkpointed


def test_same_loss_and_gradients_less_kept_same_names():
    plain, checkpointed = tiny_vit("cls"), apply_activation_checkpointing(tiny_vit("cls"), 1)
    assert [n for n, _ in plain.named_parameters()] == [n for n, _ in checkpointed.named_parameters()]
    (loss, grads), (loss_c, grads_c) = loss_and_grads(plain), loss_and_grads(checkpointed)
    assert torch.equal(loss, loss_c)
    for name, grad in grads.items():
        torch.testing.assert_close(grads_c[name], grad, rtol=0, atol=0, msg=name)
    x, _ = tiny_batch()
    kept, kept_checkpointed = saved_activation_bytes(plain, x), saved_activation_bytes(checkpointed, x)
    print(f"saved for backward: {kept} bytes plain, {kept_checkpointed} checkpointed")
    assert kept_checkpointed < 0.5 * kept


def test_a_model_without_blocks_is_refused_naming_the_parameter():
    with pytest.raises(UsageError, match="activation_checkpointing checkpoints transformer blocks"):
        apply_activation_checkpointing(torch.nn.Linear(2, 2), 1)
