"""Tensor parallelism over a timm ViT's attention heads and MLP columns (Megatron's split, torch's API).

Ranks ``g*tp .. g*tp+tp-1`` form tensor-parallel (TP) group ``g`` (the ``tp`` dimension of a
``DeviceMesh`` of shape (DP, TP), row-major as ``init_device_mesh`` lays it out); they see the same
images. In every block ``torch.distributed.tensor.parallel.parallelize_module`` shards ``attn.qkv`` and
``mlp.fc1`` column-wise (each rank computes its heads' q, k, v and its share of the hidden units) and
``attn.proj`` and ``mlp.fc2`` row-wise (each rank's partial product, summed by one all-reduce): two
all-reduces a block forward, two backward, as Megatron-LM. Everything else (patch and position
embeddings, norms, head) is replicated.

qkv's rows are ordered (q|k|v, head, dim); a contiguous row shard would hand a rank all of q and part of
k. ``apply_tensor_parallel`` reorders them to (rank, q|k|v, head, dim) before sharding, so each rank's
shard is q, k, v of its own heads and timm's ``Attention.forward`` runs unchanged on ``num_heads / tp``
heads. ``qkv_rows_in_timm_order`` undoes it (tests compare against TP 1 with it).

Gradient rule (exact, pinned by tests/test_tensor_parallel.py): a column-parallel layer's input enters as
a replicated DTensor whose backward all-reduces its gradient over the TP group, and a row-parallel
layer's output is all-reduced to a replicated one, so every TP rank computes the same loss and the full
gradient of every replicated parameter, and the exact gradient of its own shards. The data-parallel mean
therefore runs over the DP sub-mesh only; over all ranks it would mix the shards of different TP ranks.
Clipping needs the global norm of the sharded and replicated gradients. Both are the engine's
(``trainers.engines.tensor_parallel_grads``), which finds the DP group in ``TensorParallelViT.parallel``.
"""

from __future__ import annotations

from dataclasses import dataclass

import torch
import torch.distributed as dist
from torch import nn

from raysweep.core.errors import UsageError

# Block submodules and how they are split (timm's Block: attn.qkv, attn.proj, mlp.fc1, mlp.fc2).
COLUMN_WISE = ("attn.qkv", "mlp.fc1")
ROW_WISE = ("attn.proj", "mlp.fc2")


@dataclass(frozen=True)
class TensorParallelMesh:
    """This rank's place in the DP x TP grid: the 2-D mesh, its TP sub-mesh and the DP group."""

    mesh: object  # torch.distributed.device_mesh.DeviceMesh of dims ("dp", "tp")
    tp_size: int
    tp_rank: int
    dp_group: dist.ProcessGroup
    dp_size: int
    dp_rank: int

    @property
    def tp_mesh(self):
        return self.mesh["tp"]


def build_mesh(world: int, tp: int, device: torch.device) -> TensorParallelMesh | None:
    """The (DP, TP) mesh on an initialised default process group; None for TP 1. Every rank must call it."""
    if tp == 1:
        return None
    from torch.distributed.device_mesh import init_device_mesh

    mesh = init_device_mesh(device.type, (world // tp, tp), mesh_dim_names=("dp", "tp"))
    return TensorParallelMesh(
        mesh,
        tp,
        mesh["tp"].get_local_rank(),
        mesh["dp"].get_group(),
        world // tp,
        mesh["dp"].get_local_rank(),
    )


def qkv_rows_for_shards(t: torch.Tensor, tp: int) -> torch.Tensor:
    """qkv weight or bias rows from timm's (q|k|v, head, dim) order to (rank, q|k|v, head, dim)."""
    return t.reshape(3, tp, -1, *t.shape[1:]).transpose(0, 1).reshape(t.shape)


def qkv_rows_in_timm_order(t: torch.Tensor, tp: int) -> torch.Tensor:
    """The inverse of ``qkv_rows_for_shards``: a gathered qkv weight, bias or gradient in timm's row order."""
    return t.reshape(tp, 3, -1, *t.shape[1:]).transpose(0, 1).reshape(t.shape)


class TensorParallelViT(nn.Module):
    """A timm ``VisionTransformer`` whose blocks are split over the mesh's TP dimension; it keeps the mesh
    (``parallel``) so the engine reduces gradients over the DP sub-mesh."""

    def __init__(self, vit: nn.Module, mesh: TensorParallelMesh):
        from torch.distributed.tensor.parallel import ColwiseParallel, RowwiseParallel, parallelize_module

        super().__init__()
        self.vit, self.parallel = vit, mesh
        tp = mesh.tp_size
        plan = {name: ColwiseParallel() for name in COLUMN_WISE} | {name: RowwiseParallel() for name in ROW_WISE}
        for block in vit.blocks:
            attn = block.attn
            if not isinstance(attn.norm, nn.Identity) or getattr(attn, "gate", None) is not None:
                raise UsageError("tensor_parallel needs timm attention without scale_norm or gating")
            with torch.no_grad():
                attn.qkv.weight.copy_(qkv_rows_for_shards(attn.qkv.weight, tp))
                if attn.qkv.bias is not None:
                    attn.qkv.bias.copy_(qkv_rows_for_shards(attn.qkv.bias, tp))
            attn.num_heads //= tp
            attn.attn_dim //= tp
            parallelize_module(block, mesh.tp_mesh, plan)

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        return self.vit(x)


def apply_tensor_parallel(model: nn.Module, mesh: TensorParallelMesh | None) -> nn.Module:
    """The model itself for TP 1, else its blocks split over the TP group (after ``check_tensor_parallel``)."""
    return model if mesh is None else TensorParallelViT(model, mesh)
