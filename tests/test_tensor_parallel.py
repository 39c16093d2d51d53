"""Tensor parallelism: the unit of truth that TP ranks (torch's tensor-parallel API on gloo CPU ranks)
reproduce TP 1's loss and every gradient, clipped, with data parallelism over the DP sub-mesh beside them;
the qkv row order; and the refusals of degrees a model or engine cannot take."""

from __future__ import annotations

import pytest
import torch
import torch.distributed as dist
import torch.multiprocessing as mp
import torch.nn.functional as F

from raysweep.core.errors import UsageError
from raysweep.core.params import TrialParams
from tests.gloo_group import gloo_group
from tests.test_sequence_parallel import MODELS, tiny_vit
from trainers.engines.tensor_parallel_grads import average_gradients, clip_grad_norm
from trainers.model.tensor_parallel import (
    apply_tensor_parallel,
    build_mesh,
    qkv_rows_for_shards,
    qkv_rows_in_timm_order,
)
from trainers.model.tensor_parallel_check import (
    WidthShape,
    check_tensor_parallel,
    declared_width_shape,
    width_shape,
)

BATCH = 8
# Small enough that every run's gradients are clipped: the clip factor must be the global norm's on every rank.
MAX_NORM = 0.05
# (world, TP): TP 2 on 2 ranks (DP 1), TP 2 on 4 (DP 2), TP 4 on 4 (DP 1); "avg" has 4 heads, width 48, MLP 192.
RUNS = [(2, 2), (4, 2), (4, 4)]


def tiny_batch() -> tuple[torch.Tensor, torch.Tensor]:
    generator = torch.Generator().manual_seed(1)
    return torch.randn(BATCH, 3, 32, 32, generator=generator), torch.randint(0, 10, (BATCH,), generator=generator)


def full_gradients(model: torch.nn.Module, tp: int) -> dict[str, torch.Tensor]:
    """Every parameter's gradient gathered whole, in timm's names and qkv row order."""
    from torch.distributed.tensor import DTensor

    grads = {}
    for name, p in model.named_parameters():
        grad = p.grad.full_tensor() if isinstance(p.grad, DTensor) else p.grad.clone()
        if name.endswith(("attn.qkv.weight", "attn.qkv.bias")):
            grad = qkv_rows_in_timm_order(grad, tp)
        grads[name.removeprefix("vit.")] = grad
    return grads


def tp_worker(rank: int, world: int, tp: int, names: list[str], out_dir: str) -> None:
    """One rank: the batch split over DP ranks, each block over TP ranks; the DDP engine's rule (mean over the DP
    group, then the global-norm clip); rank 0 saves the loss and the clipped gradients."""
    torch.set_num_threads(1)
    with gloo_group(rank, world, out_dir):
        mesh = build_mesh(world, tp, torch.device("cpu"))
        x_all, y_all = tiny_batch()
        for name in names:
            model = apply_tensor_parallel(tiny_vit(name), mesh)
            shard = slice(mesh.dp_rank * BATCH // mesh.dp_size, (mesh.dp_rank + 1) * BATCH // mesh.dp_size)
            loss = F.cross_entropy(model(x_all[shard]), y_all[shard])
            loss.backward()
            average_gradients(model, mesh.dp_group, mesh.dp_size)
            norm = clip_grad_norm(list(model.parameters()), MAX_NORM)
            mean_loss = loss.detach().clone()
            dist.all_reduce(mean_loss, group=mesh.dp_group)
            result = {"loss": mean_loss / mesh.dp_size, "norm": norm, "grads": full_gradients(model, tp)}  # collective
            if rank == 0:
                torch.save(result, f"{out_dir}/{name}_w{world}_tp{tp}.pt")


@pytest.fixture(scope="module")
def tp_runs(tmp_path_factory) -> dict[tuple[int, int, str], dict]:
    runs = {}
    for world, tp in RUNS:
        out = tmp_path_factory.mktemp(f"tp_w{world}_tp{tp}")
        mp.spawn(tp_worker, args=(world, tp, ["avg", "cls"], str(out)), nprocs=world, join=True)
        runs |= {(world, tp, name): torch.load(out / f"{name}_w{world}_tp{tp}.pt") for name in ("avg", "cls")}
    return runs


def tp1_result(name: str) -> dict:
    """TP 1 in one process: the whole batch, the plain timm model, torch's clip."""
    torch.set_num_threads(1)
    model = tiny_vit(name)
    x, y = tiny_batch()
    loss = F.cross_entropy(model(x), y)
    loss.backward()
    norm = torch.nn.utils.clip_grad_norm_(model.parameters(), MAX_NORM)
    return {"loss": loss.detach(), "norm": norm, "grads": {n: p.grad.clone() for n, p in model.named_parameters()}}


@pytest.mark.parametrize("world, tp", RUNS, ids=[f"w{w}-tp{tp}" for w, tp in RUNS])
@pytest.mark.parametrize("name", ["avg", "cls"])
def test_tp_reproduces_loss_norm_and_every_clipped_gradient_of_tp1(tp_runs, world, tp, name):
    run, expected = tp_runs[(world, tp, name)], tp1_result(name)
    torch.testing.assert_close(run["loss"], expected["loss"], rtol=1e-5, atol=1e-6)
    assert expected["norm"] > MAX_NORM  # the clip acts, so its factor is compared too
    torch.testing.assert_close(run["norm"], expected["norm"], rtol=1e-5, atol=1e-6)
    assert run["grads"].keys() == expected["grads"].keys()
    for param_name, grad in expected["grads"].items():
        torch.testing.assert_close(run["grads"][param_name], grad, rtol=1e-4, atol=1e-7, msg=param_name)


def test_qkv_rows_regroup_so_each_shard_holds_q_k_v_of_its_own_heads():
    heads, dim, tp = 4, 2, 2
    rows = torch.arange(3 * heads * dim)  # (q|k|v, head, dim) in timm's order
    shards = qkv_rows_for_shards(rows, tp).chunk(tp)
    q, k, v = (rows.reshape(3, heads, dim)[i] for i in range(3))
    assert torch.equal(shards[1], torch.cat([q[2:].flatten(), k[2:].flatten(), v[2:].flatten()]))
    assert torch.equal(qkv_rows_in_timm_order(qkv_rows_for_shards(rows, tp), tp), rows)


def test_width_shape_is_read_off_the_model_and_declared_for_presets():
    assert width_shape("vit_base_patch16_224") == WidthShape(12, 768, 3072)
    assert declared_width_shape("vit_micro_avg_patch4_32") == width_shape("vit_micro_avg_patch4_32")
    assert declared_width_shape("vit_base_patch16_224") is None  # a timm name: read off the model in planning
    assert MODELS["avg"]["num_heads"] == 4  # the runs above split 4 heads over 2 and 4 ranks


@pytest.mark.parametrize(
    "tp, shape, engine, message",
    [
        (2, WidthShape(3, 96, 384), "ddp", "tensor_parallel=2 does not divide the 3 attention heads of m"),
        (4, WidthShape(4, 90, 360), "ddp", "tensor_parallel=4 does not divide the 90 embedding width of m"),
        (2, WidthShape(4, 96, 385), "ddp", "tensor_parallel=2 does not divide the 385 MLP hidden units of m"),
        (2, WidthShape(4, 96, 384), "fsdp", "tensor_parallel=2 needs engine in ddp, megatron, got engine=fsdp"),
    ],
)
def test_degrees_the_model_or_engine_cannot_take_are_refused(tp, shape, engine, message):
    with pytest.raises(UsageError, match=message):
        check_tensor_parallel(tp, shape, engine, 4, "m")


@pytest.mark.parametrize(
    "values, message",
    [
        ({"num_workers": 3, "tensor_parallel": 2}, "num_workers=3 is not a multiple of tensor_parallel=2"),
        ({"num_workers": 4, "tensor_parallel": 2, "sequence_parallel": 2}, "set one of them to 1"),
        ({"num_workers": 2, "tensor_parallel": 2, "engine": "deepspeed"}, "needs engine in ddp, megatron"),
        ({"num_workers": 2, "tensor_parallel": 2, "engine": "ddp", "compile": "true"}, "compile=true is not"),
        ({"tensor_parallel": 0}, "tensor_parallel must be a positive integer"),
        ({"engine": "megatron", "device": "cpu"}, "engine=megatron needs CUDA GPUs and the megatron extra"),
        ({"engine": "megatron"}, r"set device=gpu \(got device=auto\)"),
        ({"engine": "megatron", "device": "gpu", "optimizer": "sgd"}, "optimizer=sgd is not supported"),
        ({"engine": "megatorn"}, "did you mean 'megatron'"),
    ],
)
def test_trial_values_are_refused_in_one_line(values, message):
    with pytest.raises(UsageError, match=message) as refused:
        TrialParams.from_dict(values).validate()
    assert "\n" not in str(refused.value)


def test_tp_ranks_share_a_data_parallel_rank():
    params = TrialParams(num_workers=8, tensor_parallel=4, engine="ddp", global_batch=64)
    assert params.data_parallel_size == 2 and params.model_parallel_size == 4
    assert params.effective_micro_batch == 32 and params.train_batch_size == 64
