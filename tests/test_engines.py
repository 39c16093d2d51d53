"""The engine registry: the LR schedule's known values, and DeepSpeed's engine (held, not patched) computing
the same updates as a plain PyTorch loop with the same clipping, accumulation and schedule (CPU, gloo, 1 rank)."""

from __future__ import annotations

import math
import os
import socket

import pytest
import torch
import torch.distributed as dist
import torch.nn.functional as F

from raysweep.core.params import TrialParams
from trainers.deepspeed_config import GRAD_CLIP_NORM
from trainers.engines import ENGINES, build_engine, build_optimizer, lr_factor
from trainers.engines.deepspeed import clips_outside_deepspeed


def test_every_engine_parameter_value_has_an_engine():
    from raysweep.core.params import ENGINES as ENGINE_NAMES

    assert set(ENGINES) == set(ENGINE_NAMES)


@pytest.mark.parametrize(
    ("step", "schedule", "expected"),
    [
        (0, "cosine", 0.5),  # warm-up of 2 steps (0.2 x 10): 1/2, then 2/2
        (1, "cosine", 1.0),
        (2, "cosine", 1.0),  # cosine starts at the peak ...
        (6, "cosine", 0.5),  # ... is half-way at 4 of its 8 steps ...
        (10, "cosine", 0.0),  # ... and 0 at the end
        (0, "constant", 0.5),
        (7, "constant", 1.0),
    ],
)
def test_lr_factor_known_values(step, schedule, expected):
    assert lr_factor(step, total_steps=10, warmup_share=0.2, schedule=schedule) == pytest.approx(expected, abs=1e-12)


def test_no_warmup_starts_at_the_peak():
    assert lr_factor(0, 100, 0.0, "cosine") == 1.0
    assert lr_factor(25, 100, 0.0, "cosine") == pytest.approx(0.5 * (1 + math.cos(math.pi / 4)))


@pytest.mark.parametrize(
    ("values", "ours"),
    [
        ({"precision": "fp32"}, True),
        ({"device": "gpu", "precision": "bf16", "amp": "autocast"}, True),
        ({"device": "gpu", "precision": "bf16", "amp": "deepspeed"}, False),  # DeepSpeed's bf16 engine clips
        ({"device": "gpu", "precision": "fp16", "amp": "autocast"}, False),  # its GradScaler unscales first
        ({"precision": "fp32", "zero_stage": 1}, False),  # ZeRO clips its partitions
    ],
)
def test_we_clip_only_where_the_gradients_are_the_true_fp32_ones(values, ours):
    assert clips_outside_deepspeed(TrialParams.from_dict(values)) is ours


@pytest.fixture(scope="module")
def one_rank_group():
    """One gloo group for the module: DeepSpeed keeps the first group it sees for the process's life."""
    os.environ.setdefault("DS_ACCELERATOR", "cpu")
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        port = s.getsockname()[1]
    env = {"MASTER_ADDR": "127.0.0.1", "MASTER_PORT": str(port), "RANK": "0", "WORLD_SIZE": "1", "LOCAL_RANK": "0"}
    old = {k: os.environ.get(k) for k in env}
    os.environ.update(env)
    dist.init_process_group("gloo", rank=0, world_size=1)
    yield
    dist.destroy_process_group()
    for k, v in old.items():
        if v is None:
            os.environ.pop(k, None)
        else:
            os.environ[k] = v


def tiny_vit() -> torch.nn.Module:
    from timm.models.vision_transformer import VisionTransformer

    torch.manual_seed(0)
    return VisionTransformer(img_size=8, patch_size=4, num_classes=3, embed_dim=16, depth=1, num_heads=2)


def batches(n: int):
    g = torch.Generator().manual_seed(1)
    return [(torch.randn(4, 3, 8, 8, generator=g), torch.randint(0, 3, (4,), generator=g)) for _ in range(n)]


def test_deepspeed_engine_matches_plain_torch_with_clipping_accumulation_and_schedule(one_rank_group):
    steps, accum = 4, 2
    params = TrialParams.from_dict(
        {"optimizer": "sgd", "lr": 0.5, "grad_accum_steps": accum, "micro_batch_per_worker": 4, "lr_warmup": 0.25}
    ).resolve(cluster_has_gpus=False)
    data = batches(steps * accum)
    engine = build_engine(params, tiny_vit(), torch.device("cpu"), total_steps=steps)
    ours = []
    for x, y in data:
        loss = F.cross_entropy(engine(x), y)
        engine.backward(loss)
        engine.step()
        ours.append(loss.item())

    model = tiny_vit()
    optimizer = build_optimizer(params, model, torch.device("cpu"))  # timm's SGD: Nesterov, no decay on norms
    schedule = torch.optim.lr_scheduler.LambdaLR(optimizer, lambda s: lr_factor(s, steps, 0.25, "cosine"))
    reference, norms = [], []
    for i, (x, y) in enumerate(data):
        loss = F.cross_entropy(model(x), y)
        (loss / accum).backward()
        reference.append(loss.item())
        if (i + 1) % accum == 0:
            norms.append(float(torch.nn.utils.clip_grad_norm_(model.parameters(), GRAD_CLIP_NORM)))
            optimizer.step()
            schedule.step()
            optimizer.zero_grad()
    assert max(norms) > GRAD_CLIP_NORM, "the clipping must change an update for this test to pin it"
    assert ours == pytest.approx(reference, rel=1e-5)
    # The schedule stepped once per optimizer step: it stands at step `steps` (cosine's end, 0).
    assert engine.ds.get_lr() == pytest.approx([0.5 * lr_factor(steps, steps, 0.25, "cosine")] * 2)


def test_deepspeed_engine_checkpoint_resumes_the_same_losses_and_schedule(one_rank_group, tmp_path):
    params = TrialParams.from_dict(
        {"optimizer": "adamw", "lr": 0.01, "grad_accum_steps": 1, "micro_batch_per_worker": 4}
    ).resolve(cluster_has_gpus=False)
    data = batches(6)

    def run(engine, part):
        losses = []
        for x, y in part:
            loss = F.cross_entropy(engine(x), y)
            engine.backward(loss)
            engine.step()
            losses.append(loss.item())
        return losses

    straight = build_engine(params, tiny_vit(), torch.device("cpu"), total_steps=6)
    expected = run(straight, data)
    first = build_engine(params, tiny_vit(), torch.device("cpu"), total_steps=6)
    run(first, data[:3])
    first.save(tmp_path, rank=0)
    resumed = build_engine(params, tiny_vit(), torch.device("cpu"), total_steps=6)
    resumed.load(tmp_path)
    assert resumed.ds.get_lr() == pytest.approx(first.ds.get_lr())  # the schedule's state came back too
    assert run(resumed, data[3:]) == pytest.approx(expected[3:], rel=1e-5)
