"""FSDPEngine against plain torch DDP: the same seed and batches give the same losses (CPU, gloo, 2 ranks).

Both sides use the same optimizer (SGD with momentum and weight decay, so clipping changes the
update: the tiny model's gradient norm is above GRAD_CLIP_NORM), the same LR schedule and
accumulation over 2 micro batches. A checkpoint written after 2 optimizer steps, merged from the
ranks' own directories as Ray Train merges them, makes a freshly initialised engine continue with
the same losses.
"""

from __future__ import annotations

import json
import shutil
from pathlib import Path

import pytest
import torch
import torch.distributed as dist
import torch.multiprocessing as mp
import torch.nn.functional as F
from torch.nn.parallel import DistributedDataParallel

from raysweep.core.params import TrialParams
from tests.gloo_group import gloo_group
from trainers.engines.deepspeed_config import GRAD_CLIP_NORM
from trainers.engines.fsdp import FSDPEngine
from trainers.model.activation_checkpointing import apply_activation_checkpointing

WORLD = 2
ACCUM = 2
STEPS = 4  # optimizer steps; the checkpoint is taken after SAVE_AT of them
SAVE_AT = 2
MICRO_BATCH = 4


def tiny_vit(seed: int) -> torch.nn.Module:
    from timm.models.vision_transformer import VisionTransformer

    torch.manual_seed(seed)
    return VisionTransformer(img_size=8, patch_size=4, num_classes=3, embed_dim=16, depth=2, num_heads=2)


def make_optimizer(module: torch.nn.Module) -> torch.optim.Optimizer:
    return torch.optim.SGD(module.parameters(), lr=0.1, momentum=0.9, weight_decay=0.05)


def make_scheduler(optimizer: torch.optim.Optimizer) -> torch.optim.lr_scheduler.LRScheduler:
    return torch.optim.lr_scheduler.LambdaLR(optimizer, lambda step: min(1.0, (step + 1) / 3))


def micro_batches(rank: int, steps: range):
    """The same batches for every engine: a rank's micro batch depends on (rank, step, micro) alone."""
    for step in steps:
        for micro in range(ACCUM):
            g = torch.Generator().manual_seed(1000 * rank + 10 * step + micro)
            yield torch.randn(MICRO_BATCH, 3, 8, 8, generator=g), torch.randint(0, 3, (MICRO_BATCH,), generator=g)


def ddp_losses(rank: int, checkpointing: int = 0) -> list[float]:
    """The reference: torch DDP, no sync between boundaries, clipping, then step and schedule."""
    model = DistributedDataParallel(apply_activation_checkpointing(tiny_vit(seed=0), checkpointing))
    optimizer = make_optimizer(model)
    scheduler = make_scheduler(optimizer)
    losses = []
    for i, (x, y) in enumerate(micro_batches(rank, range(STEPS))):
        boundary = (i + 1) % ACCUM == 0
        loss = F.cross_entropy(model(x), y)
        if boundary:
            (loss / ACCUM).backward()
            torch.nn.utils.clip_grad_norm_(model.parameters(), GRAD_CLIP_NORM)
            optimizer.step()
            scheduler.step()
            optimizer.zero_grad(set_to_none=True)
        else:
            with model.no_sync():
                (loss / ACCUM).backward()
        losses.append(loss.item())
    return losses


def engine_losses(engine: FSDPEngine, rank: int, steps: range) -> list[float]:
    losses = []
    for x, y in micro_batches(rank, steps):
        loss = F.cross_entropy(engine(x.to(engine.input_dtype)).float(), y)
        engine.backward(loss)
        engine.step()
        losses.append(loss.item())
    return losses


def fsdp_engine(seed: int, reshard_after_forward: bool, precision: str = "fp32", checkpointing: int = 0) -> FSDPEngine:
    params = TrialParams(
        num_workers=WORLD,
        grad_accum_steps=ACCUM,
        device="cpu",
        precision=precision,
        engine="fsdp",
        reshard_after_forward=reshard_after_forward,
    )
    model = apply_activation_checkpointing(tiny_vit(seed), checkpointing)
    return FSDPEngine(params, model, torch.device("cpu"), make_optimizer, make_scheduler)


def run_rank(rank: int, workdir: Path) -> None:
    with gloo_group(rank, WORLD, str(workdir)):
        result = {"ddp": ddp_losses(rank)}
        for reshard in (True, False):
            engine = fsdp_engine(seed=0, reshard_after_forward=reshard)
            result[f"fsdp_reshard_{reshard}"] = engine_losses(engine, rank, range(STEPS))
        result["ddp_checkpointed"] = ddp_losses(rank, checkpointing=1)
        checkpointed = fsdp_engine(seed=0, reshard_after_forward=True, checkpointing=1)
        result["fsdp_checkpointed"] = engine_losses(checkpointed, rank, range(STEPS))
        bf16 = fsdp_engine(seed=0, reshard_after_forward=True, precision="bf16")
        result["bf16"] = engine_losses(bf16, rank, range(STEPS))
        result["bf16_master_dtypes"] = sorted({str(p.dtype) for p in bf16.module.parameters()})
        result["bf16_logits_dtype"] = str(bf16(torch.zeros(1, 3, 8, 8)).dtype)
        engine = fsdp_engine(seed=0, reshard_after_forward=True)
        engine_losses(engine, rank, range(SAVE_AT))
        engine.save(workdir / f"rank{rank}", rank)
        result["continued"] = engine_losses(engine, rank, range(SAVE_AT, STEPS))
        dist.barrier()
        if rank == 0:  # Ray Train's merge of the ranks' checkpoint directories
            for r in range(WORLD):
                shutil.copytree(workdir / f"rank{r}", workdir / "merged", dirs_exist_ok=True)
        dist.barrier()
        resumed = fsdp_engine(seed=1, reshard_after_forward=True)  # other weights until the load
        resumed.load(workdir / "merged")
        result["resumed"] = engine_losses(resumed, rank, range(SAVE_AT, STEPS))
        (workdir / f"result{rank}.json").write_text(json.dumps(result))


@pytest.fixture(scope="module")
def results(tmp_path_factory) -> list[dict[str, list[float]]]:
    workdir = tmp_path_factory.mktemp("fsdp")
    mp.spawn(run_rank, args=(workdir,), nprocs=WORLD, join=True)
    return [json.loads((workdir / f"result{r}.json").read_text()) for r in range(WORLD)]


@pytest.mark.parametrize("reshard", [True, False])
def test_fsdp_losses_match_ddp_with_accumulation_and_clipping(results, reshard):
    for rank, result in enumerate(results):
        fsdp = result[f"fsdp_reshard_{reshard}"]
        assert len(fsdp) == STEPS * ACCUM
        assert fsdp == pytest.approx(result["ddp"], rel=1e-5, abs=1e-6), f"rank {rank}"


@pytest.mark.parametrize("run", ["ddp_checkpointed", "fsdp_checkpointed"])
def test_activation_checkpointing_takes_the_same_steps_under_ddp_and_fsdp(results, run):
    for rank, result in enumerate(results):
        assert result[run] == pytest.approx(result["ddp"], rel=1e-5, abs=1e-6), f"rank {rank}"


def test_bf16_computes_in_bf16_over_fp32_master_weights(results):
    for result in results:
        assert result["bf16_master_dtypes"] == ["torch.float32"]
        assert result["bf16_logits_dtype"] == "torch.bfloat16"
        # bf16 compute: close to the fp32 losses, not equal to them
        assert result["bf16"] == pytest.approx(result["ddp"], abs=3e-2)
        assert result["bf16"] != pytest.approx(result["ddp"], rel=1e-5, abs=1e-6)


def test_losses_change_over_steps(results):
    """The comparison above means something only if the optimizer moved the weights."""
    ddp = results[0]["ddp"]
    assert max(abs(a - b) for a, b in zip(ddp[:ACCUM], ddp[-ACCUM:])) > 1e-3


def test_resume_from_merged_checkpoint_continues_identically(results):
    for rank, result in enumerate(results):
        assert result["resumed"] == pytest.approx(result["continued"], rel=1e-6, abs=1e-7), f"rank {rank}"
        assert result["continued"] == pytest.approx(result["ddp"][SAVE_AT * ACCUM :], rel=1e-5, abs=1e-6)
