"""Real DeepSpeed (CPU, gloo) on two SP ranks: one optimizer step of the SP model under ZeRO 0 and 2 lands on
the same weights as one plain step of the SP=1 model on the same batch. This pins the engine-side rule:
no mpu, DeepSpeed's gradient mean over all ranks, train_batch_size = micro x accum x num_workers."""

from __future__ import annotations

import os

import pytest
import torch
import torch.distributed as dist
import torch.multiprocessing as mp
import torch.nn.functional as F

from raysweep.core.params import TrialParams
from tests.test_sequence_parallel import BATCH, free_port, tiny_batch, tiny_vit
from trainers.engines.deepspeed_config import build_deepspeed_config
from trainers.model.sequence_parallel import apply_sequence_parallel, build_groups

LR = 0.5  # large enough that a wrong gradient scale moves the weights visibly


def deepspeed_worker(rank: int, world: int, port: int, zero_stage: int, out_dir: str) -> None:
    os.environ.update(MASTER_ADDR="127.0.0.1", MASTER_PORT=str(port), RANK=str(rank), WORLD_SIZE=str(world))
    os.environ.update(LOCAL_RANK=str(rank), DS_ACCELERATOR="cpu")
    torch.set_num_threads(1)
    dist.init_process_group("gloo", rank=rank, world_size=world)
    import deepspeed

    params = TrialParams.from_dict(
        {"num_workers": world, "sequence_parallel": world, "micro_batch_per_worker": BATCH, "zero_stage": zero_stage}
    )
    config = build_deepspeed_config(params) | {
        "bf16": {"enabled": False},
        "fp16": {"enabled": False},
        "torch_autocast": {"enabled": False},
    }
    config["gradient_clipping"] = 0.0  # clipping would hide a wrong overall gradient scale
    model = apply_sequence_parallel(tiny_vit(), build_groups(world, params.sequence_parallel))
    optimizer = torch.optim.SGD(model.parameters(), lr=LR)
    engine, *_ = deepspeed.initialize(model=model, optimizer=optimizer, config=config)
    x, y = tiny_batch()
    engine.backward(F.cross_entropy(engine(x), y))
    engine.step()
    if rank == 0:
        weights = {n.removeprefix("vit."): p.detach().clone() for n, p in engine.module.named_parameters()}
        torch.save(weights, f"{out_dir}/weights.pt")
    dist.destroy_process_group()


@pytest.mark.parametrize("zero_stage", [0, 2])
def test_deepspeed_step_on_sp2_matches_one_sp1_step(tmp_path, zero_stage):
    mp.spawn(deepspeed_worker, args=(2, free_port(), zero_stage, str(tmp_path)), nprocs=2, join=True)
    weights = torch.load(tmp_path / "weights.pt")

    model = tiny_vit()
    x, y = tiny_batch()
    F.cross_entropy(model(x), y).backward()
    torch.optim.SGD(model.parameters(), lr=LR).step()
    for name, p in model.named_parameters():
        torch.testing.assert_close(weights[name], p.detach(), rtol=1e-4, atol=1e-5, msg=name)
