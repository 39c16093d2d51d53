"""Sequence parallelism: the group layout, the validation messages, and the unit of truth that SP
ranks reproduce SP=1's loss and gradients exactly (CPU, gloo, a tiny average-pooled ViT)."""

from __future__ import annotations

import os
import socket

import pytest
import torch
import torch.distributed as dist
import torch.multiprocessing as mp
import torch.nn.functional as F

from raysweep.core.errors import UsageError
from trainers.sequence_parallel import apply_sequence_parallel, build_groups, group_ranks
from trainers.sequence_parallel_check import TokenShape, check_sequence_parallel, token_shape

# 32 px / 4 px patches = 64 tokens, 4 heads: SP 2 and 4 both divide.
TINY = dict(img_size=32, patch_size=4, embed_dim=48, depth=2, num_heads=4, class_token=False, global_pool="avg")
BATCH = 4
VIT_B_AVG_896 = TokenShape(num_heads=12, num_tokens=3136, prefix_tokens=0, global_pool="avg")


def tiny_vit() -> torch.nn.Module:
    import timm

    torch.manual_seed(0)
    return timm.create_model("vit_tiny_patch16_224", pretrained=False, num_classes=10, **TINY)


def tiny_batch() -> tuple[torch.Tensor, torch.Tensor]:
    generator = torch.Generator().manual_seed(1)
    return torch.randn(BATCH, 3, 32, 32, generator=generator), torch.randint(0, 10, (BATCH,), generator=generator)


def saved_activation_bytes(model: torch.nn.Module, x: torch.Tensor) -> int:
    """Bytes of the tensors autograd keeps for the backward pass: the activation memory of one forward."""
    seen: dict[int, int] = {}

    def pack(t: torch.Tensor) -> torch.Tensor:
        if not isinstance(t, torch.nn.Parameter):
            seen[t.untyped_storage().data_ptr()] = t.untyped_storage().nbytes()
        return t

    with torch.autograd.graph.saved_tensors_hooks(pack, lambda t: t):
        model(x)
    return sum(seen.values())


def free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


def sp_worker(rank: int, world: int, port: int, sp_degrees: list[int], out_dir: str) -> None:
    """One rank: for each SP degree, the batch split over DP groups, tokens over SP ranks; the engine's
    rule (gradient MEAN over all ranks) applied; rank 0 saves loss and gradients."""
    os.environ.update(MASTER_ADDR="127.0.0.1", MASTER_PORT=str(port))
    torch.set_num_threads(1)
    dist.init_process_group("gloo", rank=rank, world_size=world)
    x_all, y_all = tiny_batch()
    for sp in sp_degrees:
        groups = build_groups(world, sp)
        model = apply_sequence_parallel(tiny_vit(), groups)
        shard = slice(groups.dp_rank * BATCH // groups.dp_size, (groups.dp_rank + 1) * BATCH // groups.dp_size)
        loss = F.cross_entropy(model(x_all[shard]), y_all[shard])
        loss.backward()
        grads = {}
        for name, p in model.named_parameters():
            dist.all_reduce(p.grad)
            grads[name.removeprefix("vit.")] = p.grad / world
        mean_loss = loss.detach().clone()
        dist.all_reduce(mean_loss)
        activation = saved_activation_bytes(model, x_all[:2])
        if rank == 0:
            torch.save({"loss": mean_loss / world, "grads": grads, "activation": activation}, f"{out_dir}/sp{sp}.pt")
    dist.destroy_process_group()


@pytest.fixture(scope="module")
def sp_runs(tmp_path_factory) -> dict[int, dict]:
    """World 4: SP 2 x DP 2 and SP 4 x DP 1; world 2: SP 2 x DP 1 (the issue's 'done when')."""
    out = tmp_path_factory.mktemp("sp")
    mp.spawn(sp_worker, args=(4, free_port(), [2, 4], str(out)), nprocs=4, join=True)
    runs = {(4, sp): torch.load(out / f"sp{sp}.pt") for sp in (2, 4)}
    mp.spawn(sp_worker, args=(2, free_port(), [2], str(out)), nprocs=2, join=True)
    runs[(2, 2)] = torch.load(out / "sp2.pt")
    return runs


@pytest.fixture(scope="module")
def reference() -> dict:
    """SP = 1 in one process: the whole batch, the plain timm model."""
    torch.set_num_threads(1)
    model = tiny_vit()
    x, y = tiny_batch()
    loss = F.cross_entropy(model(x), y)
    loss.backward()
    grads = {name: p.grad.clone() for name, p in model.named_parameters()}
    return {"loss": loss.detach(), "grads": grads, "activation": saved_activation_bytes(model, x[:2])}


@pytest.mark.parametrize("world_sp", [(2, 2), (4, 2), (4, 4)], ids=["sp2", "sp2xdp2", "sp4"])
def test_sp_reproduces_loss_and_every_gradient_of_sp1(sp_runs, reference, world_sp):
    run = sp_runs[world_sp]
    torch.testing.assert_close(run["loss"], reference["loss"], rtol=1e-5, atol=1e-6)
    assert run["grads"].keys() == reference["grads"].keys()
    for name, grad in reference["grads"].items():
        torch.testing.assert_close(run["grads"][name], grad, rtol=1e-4, atol=1e-6, msg=name)


def test_activation_memory_per_rank_falls_with_sp(sp_runs, reference):
    """Saved-for-backward bytes per rank: the blocks' share scales as 1/SP, the patch embedding stays whole."""
    full, sp2, sp4 = reference["activation"], sp_runs[(4, 2)]["activation"], sp_runs[(4, 4)]["activation"]
    print(f"activation bytes per rank: SP1 {full}, SP2 {sp2}, SP4 {sp4}")
    assert sp2 < 0.7 * full
    assert sp4 < 0.75 * sp2


def test_groups_are_consecutive_for_sp_and_strided_for_dp():
    sp_groups, dp_groups = group_ranks(world=8, sp=4)
    assert sp_groups == [[0, 1, 2, 3], [4, 5, 6, 7]]
    assert dp_groups == [[0, 4], [1, 5], [2, 6], [3, 7]]


def test_sp1_leaves_the_model_and_groups_alone():
    groups = build_groups(world=4, sp=1)
    model = tiny_vit()
    assert (groups.sp_size, groups.dp_size, groups.sp_group) == (1, 4, None)
    assert apply_sequence_parallel(model, groups) is model


@pytest.mark.parametrize(
    "sp, shape, zero, engine, workers, message",
    [
        (2, VIT_B_AVG_896, 0, "deepspeed", 3, "num_workers=3 is not a multiple of sequence_parallel=2"),
        (8, VIT_B_AVG_896, 0, "deepspeed", 8, "must divide the 12 attention heads"),
        (3, TokenShape(12, 196, 0, "avg"), 0, "deepspeed", 3, "must divide the 196 tokens"),
        (2, TokenShape(12, 197, 1, "token"), 0, "deepspeed", 2, "class_token=False/global_pool='avg'"),
        (2, VIT_B_AVG_896, 3, "deepspeed", 2, "supports zero_stage in (0, 1, 2), got zero_stage=3"),
        (2, VIT_B_AVG_896, 0, "fsdp", 2, "needs engine in ('deepspeed', 'ddp'), got engine='fsdp'"),
    ],
)
def test_check_refuses_what_sp_cannot_split(sp, shape, zero, engine, workers, message):
    with pytest.raises(UsageError, match=message.replace("(", r"\(").replace(")", r"\)")):
        check_sequence_parallel(sp, shape, zero, engine, workers)


@pytest.mark.parametrize("sp, engine", [(1, "fsdp"), (2, "ddp"), (4, "deepspeed")])
def test_check_accepts_supported_trials(sp, engine):
    check_sequence_parallel(sp, VIT_B_AVG_896, 2, engine, 8)


@pytest.mark.parametrize(
    "model, image_size, expected",
    [
        ("vit_base_patch16_avg_224", 896, TokenShape(12, 3136, 0, "avg")),
        ("vit_base_patch16_avg_224", 448, TokenShape(12, 784, 0, "avg")),
        ("vit_base_patch16_224", 0, TokenShape(12, 197, 1, "token")),
        ("vit_micro_avg_patch4_32", 0, TokenShape(4, 64, 0, "avg")),
    ],
)
def test_token_shape_reads_heads_and_tokens_of_a_model_name(model, image_size, expected):
    assert token_shape(model, image_size) == expected
