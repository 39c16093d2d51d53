"""Sequence parallelism: the group layout, the validation messages, and the unit of truth that SP
ranks reproduce SP=1's loss and gradients exactly (CPU, gloo, tiny ViTs: average-pooled, class-token,
with register tokens, heads the degree does not divide)."""

from __future__ import annotations

import socket

import pytest
import torch
import torch.distributed as dist
import torch.multiprocessing as mp
import torch.nn.functional as F

from raysweep.core.errors import UsageError
from tests.gloo_group import gloo_group
from trainers.model.sequence_parallel import (
    ParallelGroups,
    SequenceParallelViT,
    apply_sequence_parallel,
    build_groups,
    group_ranks,
    head_counts,
    padded_tokens,
)
from trainers.model.sequence_parallel_check import TokenShape, check_sequence_parallel, token_shape

# 32 px / 4 px patches = 64 patch tokens, embed 48. "avg": 4 heads, no class token, SP 2 and 4 divide both.
# "cls": the paper's architecture shrunk (class token, pooled by it): 65 tokens, divided by neither.
# "reg_uneven": class and 2 register tokens (67), average-pooled, 6 heads: SP 4 splits them 2, 2, 1, 1.
# "cls_3heads": 3 heads over SP 2: 2 and 1.
TINY = dict(img_size=32, patch_size=4, embed_dim=48, depth=2, num_heads=4, class_token=False, global_pool="avg")
MODELS = {
    "avg": TINY,
    "cls": TINY | dict(class_token=True, global_pool="token"),
    "reg_uneven": TINY | dict(num_heads=6, class_token=True, reg_tokens=2, global_pool="avg"),
    "cls_3heads": TINY | dict(num_heads=3, class_token=True, global_pool="token"),
}
# (model, SP degree) run on 4 ranks (DP = 4 / SP) and on 2 ranks
RUNS_ON_4 = [("avg", 2), ("avg", 4), ("cls", 2), ("cls", 4), ("reg_uneven", 2), ("reg_uneven", 4), ("cls_3heads", 2)]
RUNS_ON_4 += [("cls_checkpointed", 4)]  # every block checkpointed: its all-to-alls run again in the backward
RUNS_ON_2 = [("avg", 2), ("cls", 2), ("cls_3heads", 2)]
BATCH = 4
VIT_B_AVG_896 = TokenShape(num_heads=12, num_tokens=3136, prefix_tokens=0, global_pool="avg")


def tiny_vit(name: str = "avg") -> torch.nn.Module:
    """MODELS[name]; a name ending in _checkpointed is that model with every block's activations checkpointed."""
    import timm

    from trainers.model.activation_checkpointing import apply_activation_checkpointing

    base = name.removesuffix("_checkpointed")
    torch.manual_seed(0)
    model = timm.create_model("vit_tiny_patch16_224", pretrained=False, num_classes=10, **MODELS[base])
    return model if base == name else apply_activation_checkpointing(model, 1)


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


def sp_worker(rank: int, world: int, runs: list[tuple[str, int]], out_dir: str) -> None:
    """One rank: for each (model, SP degree), the batch split over DP groups, tokens over SP ranks; the
    engine's rule (gradient MEAN over all ranks) applied; rank 0 saves loss and gradients."""
    torch.set_num_threads(1)
    with gloo_group(rank, world, out_dir):
        x_all, y_all = tiny_batch()
        for name, sp in runs:
            groups = build_groups(world, sp)
            model = apply_sequence_parallel(tiny_vit(name), groups)
            shard = slice(groups.dp_rank * BATCH // groups.dp_size, (groups.dp_rank + 1) * BATCH // groups.dp_size)
            loss = F.cross_entropy(model(x_all[shard]), y_all[shard])
            loss.backward()
            grads = {}
            for param_name, p in model.named_parameters():
                dist.all_reduce(p.grad)
                grads[param_name.removeprefix("vit.")] = p.grad / world
            mean_loss = loss.detach().clone()
            dist.all_reduce(mean_loss)
            activation = saved_activation_bytes(model, x_all[:2])
            if rank == 0:
                result = {"loss": mean_loss / world, "grads": grads, "activation": activation}
                torch.save(result, f"{out_dir}/{name}_sp{sp}.pt")


@pytest.fixture(scope="module")
def sp_runs(tmp_path_factory) -> dict[tuple[int, str, int], dict]:
    """(world, model, SP): world 4 is SP 2 x DP 2 and SP 4 x DP 1; world 2 is SP 2 x DP 1."""
    runs = {}
    for world, cases in ((4, RUNS_ON_4), (2, RUNS_ON_2)):
        out = tmp_path_factory.mktemp(f"sp_world{world}")
        mp.spawn(sp_worker, args=(world, cases, str(out)), nprocs=world, join=True)
        runs |= {(world, name, sp): torch.load(out / f"{name}_sp{sp}.pt") for name, sp in cases}
    return runs


def sp1_result(name: str) -> dict:
    """SP = 1 in one process: the whole batch, the plain timm model."""
    torch.set_num_threads(1)
    model = tiny_vit(name)
    x, y = tiny_batch()
    loss = F.cross_entropy(model(x), y)
    loss.backward()
    grads = {param_name: p.grad.clone() for param_name, p in model.named_parameters()}
    return {"loss": loss.detach(), "grads": grads, "activation": saved_activation_bytes(model, x[:2])}


@pytest.fixture(scope="module")
def reference() -> dict:
    return sp1_result("avg")


@pytest.mark.parametrize(
    "world, name, sp",
    [(4, name, sp) for name, sp in RUNS_ON_4] + [(2, name, sp) for name, sp in RUNS_ON_2],
    ids=[f"w4-{n}-sp{sp}" for n, sp in RUNS_ON_4] + [f"w2-{n}-sp{sp}" for n, sp in RUNS_ON_2],
)
def test_sp_reproduces_loss_and_every_gradient_of_sp1(sp_runs, world, name, sp):
    run, expected = sp_runs[(world, name, sp)], sp1_result(name.removesuffix("_checkpointed"))
    torch.testing.assert_close(run["loss"], expected["loss"], rtol=1e-5, atol=1e-6)
    assert run["grads"].keys() == expected["grads"].keys()
    for param_name, grad in expected["grads"].items():
        torch.testing.assert_close(run["grads"][param_name], grad, rtol=1e-4, atol=1e-6, msg=param_name)


def test_heads_split_as_deepspeed_splits_them():
    assert head_counts(12, 8) == [2, 2, 2, 2, 1, 1, 1, 1]
    assert head_counts(6, 4) == [2, 2, 1, 1] and head_counts(12, 4) == [3] * 4
    assert padded_tokens(197, 8) == 200 and padded_tokens(65536 + 1, 8) == 65544


def test_sp_attention_passes_no_mask_so_fused_kernels_stay_eligible(monkeypatch, tmp_path):
    """SP's attention on a group of one: the plain model's output, and scaled_dot_product_attention never
    given a mask (padding is cut off, not masked), so flash attention can run it on a GPU."""
    import trainers.model.sequence_parallel as sp_module

    calls = []
    fused = F.scaled_dot_product_attention

    def recording(*args, **kwargs):
        calls.append(kwargs)
        return fused(*args, **kwargs)

    dist.init_process_group("gloo", rank=0, world_size=1, init_method=f"file://{tmp_path}/store")
    try:
        plain = tiny_vit("cls").eval()
        wrapped = SequenceParallelViT(tiny_vit("cls"), ParallelGroups(dist.group.WORLD, 0, 1, None, 0, 1)).eval()
        x, _ = tiny_batch()
        expected = plain(x)
        monkeypatch.setattr(sp_module.F, "scaled_dot_product_attention", recording)
        torch.testing.assert_close(wrapped(x), expected, rtol=1e-5, atol=1e-6)
    finally:
        dist.destroy_process_group()
    assert len(calls) == 2 and all("attn_mask" not in c and not c.get("is_causal") for c in calls)


def test_activation_memory_per_rank_falls_with_sp(sp_runs, reference):
    """Saved-for-backward bytes per rank: the blocks' share scales as 1/SP, the patch embedding stays whole."""
    full, sp2, sp4 = (
        reference["activation"],
        sp_runs[(4, "avg", 2)]["activation"],
        sp_runs[(4, "avg", 4)]["activation"],
    )
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
        (16, VIT_B_AVG_896, 0, "deepspeed", 16, "exceeds the 12 attention heads"),
        (2, TokenShape(12, 197, 1, "map"), 0, "deepspeed", 2, "global_pool='map': use global_pool in"),
        (2, VIT_B_AVG_896, 3, "deepspeed", 2, "supports zero_stage in (0, 1, 2), got zero_stage=3"),
        (2, VIT_B_AVG_896, 0, "fsdp", 2, "needs engine in ('deepspeed', 'ddp'), got engine='fsdp'"),
    ],
)
def test_check_refuses_what_sp_cannot_split(sp, shape, zero, engine, workers, message):
    with pytest.raises(UsageError, match=message.replace("(", r"\(").replace(")", r"\)")):
        check_sequence_parallel(sp, shape, zero, engine, workers)


@pytest.mark.parametrize("sp, engine", [(1, "fsdp"), (2, "ddp"), (4, "deepspeed"), (8, "deepspeed")])
@pytest.mark.parametrize("shape", [VIT_B_AVG_896, TokenShape(12, 65537, 1, "token")], ids=["avg", "cls-4096px"])
def test_check_accepts_supported_trials(sp, engine, shape):
    check_sequence_parallel(sp, shape, 2, engine, 8)


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
