"""Activation checkpointing: which blocks it checkpoints, that it changes no loss or gradient, that it keeps
less for the backward, and that parameter names stay as they were (the engines and checkpoints see one model).
The engines' runs with it: DeepSpeed ZeRO here, tests/test_fsdp_engine.py (FSDP2, DDP),
tests/test_sequence_parallel.py (SP)."""

from __future__ import annotations

import json
import os
from pathlib import Path

import pytest
import torch
import torch.distributed as dist
import torch.multiprocessing as mp
import torch.nn.functional as F

from raysweep.core.errors import UsageError
from raysweep.core.params import TrialParams
from tests.test_sequence_parallel import free_port, saved_activation_bytes, tiny_batch, tiny_vit
from trainers.model.activation_checkpointing import CheckpointedForward, apply_activation_checkpointing


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


def deepspeed_rank(rank: int, port: int, out: str) -> None:
    """One DeepSpeed rank (its own process: DeepSpeed keeps the first group it sees): SGD steps of the tiny
    class-token ViT at ZeRO 0 and 2, with and without checkpointing every block."""
    from trainers.engines import build_engine

    os.environ.update(DS_ACCELERATOR="cpu", MASTER_ADDR="127.0.0.1", MASTER_PORT=str(port))
    os.environ.update(RANK="0", WORLD_SIZE="1", LOCAL_RANK="0")
    torch.set_num_threads(1)
    dist.init_process_group("gloo", rank=0, world_size=1)
    losses = {}
    for zero_stage in (0, 2):
        params = TrialParams(optimizer="sgd", lr=0.5, zero_stage=zero_stage, lr_warmup=0.0, device="cpu")
        params = params.resolve(cluster_has_gpus=False)
        for every in (0, 1):
            engine = build_engine(
                params, apply_activation_checkpointing(tiny_vit("cls"), every), torch.device("cpu"), 3
            )
            x, y = tiny_batch()
            run = []
            for _ in range(3):
                loss = F.cross_entropy(engine(x), y)
                engine.backward(loss)
                engine.step()
                run.append(loss.item())
            losses[f"zero{zero_stage}_every{every}"] = run
    Path(out).write_text(json.dumps(losses))
    dist.destroy_process_group()


def test_deepspeed_zero_0_and_2_take_the_same_steps_with_checkpointing(tmp_path):
    out = tmp_path / "losses.json"
    mp.spawn(deepspeed_rank, args=(free_port(), str(out)), nprocs=1, join=True)
    losses = json.loads(out.read_text())
    for zero_stage in (0, 2):
        plain, checkpointed = losses[f"zero{zero_stage}_every0"], losses[f"zero{zero_stage}_every1"]
        assert plain[0] != pytest.approx(plain[-1], rel=1e-3)  # the optimizer moved the weights
        assert checkpointed == pytest.approx(plain, rel=1e-6), f"zero_stage={zero_stage}"
