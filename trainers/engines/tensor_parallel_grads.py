"""The DDP engine's gradient rules under tensor parallelism (trainers/model/tensor_parallel.py says why they
are exact): the mean over the data-parallel group alone, and the clip at the global norm of sharded (DTensor)
and replicated gradients together."""

from __future__ import annotations

from typing import Protocol

import torch
import torch.distributed as dist
from torch import nn


class ParallelLayout(Protocol):
    """What the engine reads of a tensor-parallel model's ``parallel`` (``TensorParallelMesh``)."""

    tp_rank: int
    dp_group: dist.ProcessGroup
    dp_size: int
    dp_rank: int


def tensor_parallel_layout(model: nn.Module) -> ParallelLayout | None:
    """The model's DP x TP layout where its blocks are split over ranks; None for a replicated model."""
    return getattr(model, "parallel", None)


def local_gradient(p: torch.Tensor) -> torch.Tensor | None:
    """A parameter's gradient on this rank: its shard for a sharded (DTensor) parameter."""
    from torch.distributed.tensor import DTensor

    grad = p.grad
    return grad.to_local() if isinstance(grad, DTensor) else grad


def average_gradients(model: nn.Module, dp_group: dist.ProcessGroup, dp_size: int) -> None:
    """The mean of every gradient over the DP group, in place: one flat all-reduce per dtype."""
    if dp_size == 1:
        return
    grads = [g for g in (local_gradient(p) for p in model.parameters()) if g is not None]
    for dtype in {g.dtype for g in grads}:
        same = [g for g in grads if g.dtype == dtype]
        flat = torch.cat([g.reshape(-1) for g in same])
        dist.all_reduce(flat, group=dp_group)
        flat /= dp_size
        for g, reduced in zip(same, flat.split([g.numel() for g in same])):
            g.copy_(reduced.view_as(g))


def clip_grad_norm(parameters, max_norm: float) -> torch.Tensor:
    """``torch.nn.utils.clip_grad_norm_`` over replicated and TP-sharded parameters alike: each sharded
    gradient's norm is its whole tensor's (a partial norm all-reduced over the TP group), so every TP rank
    scales by the same factor as TP 1 would."""
    from torch.distributed.tensor import DTensor

    grads = [p.grad for p in parameters if p.grad is not None]
    if not grads:
        return torch.zeros(())
    norms = []
    for g in grads:
        norm = torch.linalg.vector_norm(g)
        norms.append(norm.full_tensor() if isinstance(norm, DTensor) else norm)
    total = torch.linalg.vector_norm(torch.stack(norms))
    scale = torch.clamp(max_norm / (total + 1e-6), max=1.0)
    for g in grads:
        (g.to_local() if isinstance(g, DTensor) else g).mul_(scale)
    return total
