"""Sequence parallelism over a ViT's patch tokens (DeepSpeed-Ulysses for images).

Ranks ``g*sp .. g*sp+sp-1`` form sequence-parallel (SP) group ``g``: they see the same images and
each keeps ``1/sp`` of every image's patch tokens through the blocks. Attention needs every token,
so around the attention core one all-to-all turns "my tokens, all heads" into "all tokens, my
heads" and a second turns it back (Ulysses). The head sees features mean-pooled over all tokens:
an all-reduce of each shard's token sum over the SP group.

Gradient rule (exact, pinned by tests/test_sequence_parallel.py): the pooled features come from an
all-reduce SUM whose backward is again an all-reduce SUM (as ``torch.distributed.nn.functional``'s). Every SP
rank computes the same logits and the same loss (the full samples' loss), so each rank's gradient
of its shard's token sum is ``sp x`` the true one; parameters before the pooling get ``sp x`` their
shard's share, parameters after it (fc_norm, head) the full gradient. The mean over the SP group of
both is the exact gradient, so **the engine's ordinary gradient MEAN over the whole world
(num_workers ranks: DeepSpeed ZeRO 0-2 or DDP, no mpu, no hook) is exact**: mean over DP of the
exact per-group gradients. DeepSpeed must then count every rank as a data-parallel one
(``trainers.deepspeed_config.build_deepspeed_config``'s ``train_batch_size``).
"""

from __future__ import annotations

from dataclasses import dataclass

import torch
import torch.distributed as dist
import torch.nn.functional as F
from torch import nn

from raysweep.core.errors import UsageError


@dataclass(frozen=True)
class ParallelGroups:
    """This rank's place in the SP x DP grid; ``sp_group`` is None when SP is 1."""

    sp_group: dist.ProcessGroup | None
    sp_rank: int
    sp_size: int
    dp_group: dist.ProcessGroup | None
    dp_rank: int
    dp_size: int


def group_ranks(world: int, sp: int) -> tuple[list[list[int]], list[list[int]]]:
    """SP groups of consecutive ranks (rank // sp) and DP groups of equal SP position (rank % sp)."""
    sp_groups = [list(range(g * sp, (g + 1) * sp)) for g in range(world // sp)]
    dp_groups = [list(range(pos, world, sp)) for pos in range(sp)]
    return sp_groups, dp_groups


def build_groups(world: int, sp: int) -> ParallelGroups:
    """Create the groups on an initialised default process group; every rank must call it (new_group is collective)."""
    rank = dist.get_rank() if dist.is_initialized() else 0
    if sp == 1:
        return ParallelGroups(None, 0, 1, None, rank, world)
    sp_groups, dp_groups = group_ranks(world, sp)
    # new_group must be called by every rank for every group, in the same order.
    sp_handles = [dist.new_group(ranks) for ranks in sp_groups]
    dp_handles = [dist.new_group(ranks) for ranks in dp_groups]
    return ParallelGroups(sp_handles[rank // sp], rank % sp, sp, dp_handles[rank % sp], rank // sp, world // sp)


class _AllToAll(torch.autograd.Function):
    """Chunk i of dim 0 goes to rank i of the group; the result's chunk i came from rank i. The
    backward sends every gradient chunk back where its value came from: the same all-to-all."""

    @staticmethod
    def forward(ctx, x: torch.Tensor, group: dist.ProcessGroup) -> torch.Tensor:
        ctx.group = group
        x = x.contiguous()
        out = torch.empty_like(x)
        dist.all_to_all_single(out, x, group=group)
        return out

    @staticmethod
    def backward(ctx, grad: torch.Tensor) -> tuple[torch.Tensor, None]:
        return _AllToAll.apply(grad, ctx.group), None


class _AllReduceSum(torch.autograd.Function):
    """Sum over the group; the backward sums the gradients over the group too (the module docstring's rule)."""

    @staticmethod
    def forward(ctx, x: torch.Tensor, group: dist.ProcessGroup) -> torch.Tensor:
        ctx.group = group
        out = x.clone()
        dist.all_reduce(out, group=group)
        return out

    @staticmethod
    def backward(ctx, grad: torch.Tensor) -> tuple[torch.Tensor, None]:
        return _AllReduceSum.apply(grad, ctx.group), None


def all_to_all(x: torch.Tensor, group: dist.ProcessGroup) -> torch.Tensor:
    return _AllToAll.apply(x, group)


class UlyssesAttention(nn.Module):
    """timm's ``Attention`` on a token shard: one all-to-all of the packed q, k, v to "all tokens,
    1/sp of the heads", local scaled-dot-product attention, one all-to-all back.

    Written on torch.distributed rather than ``deepspeed.sequence.layer.DistributedAttention``:
    that one moves q, k and v in three all-to-alls through ``deepspeed.comm``; here the packed qkv
    goes in one, and the DDP engine (no deepspeed.comm set-up) works the same.
    """

    def __init__(self, attention: nn.Module, group: dist.ProcessGroup, sp: int):
        super().__init__()
        self.qkv, self.proj, self.proj_drop = attention.qkv, attention.proj, attention.proj_drop
        self.q_norm, self.k_norm, self.norm = attention.q_norm, attention.k_norm, attention.norm
        self.num_heads, self.head_dim = attention.num_heads, attention.head_dim
        self.attn_drop_p = attention.attn_drop.p
        self.group, self.sp = group, sp

    def forward(self, x: torch.Tensor, attn_mask: torch.Tensor | None = None, is_causal: bool = False) -> torch.Tensor:
        batch, local_tokens, _ = x.shape
        sp, heads = self.sp, self.num_heads // self.sp
        qkv = self.qkv(x).reshape(batch, local_tokens, 3, sp, heads, self.head_dim)
        # [sp (head slice: destination), tokens, batch, 3, heads, dim] -> [sp (token slice: source), ...]
        qkv = all_to_all(qkv.permute(3, 1, 0, 2, 4, 5), self.group)
        q, k, v = qkv.reshape(sp * local_tokens, batch, 3, heads, self.head_dim).permute(2, 1, 3, 0, 4).unbind(0)
        q, k = self.q_norm(q), self.k_norm(k)
        dropout = self.attn_drop_p if self.training else 0.0
        out = F.scaled_dot_product_attention(q, k, v, attn_mask=attn_mask, dropout_p=dropout, is_causal=is_causal)
        # [batch, heads, tokens, dim] -> [sp (token slice: destination), local tokens, batch, heads, dim]
        out = out.permute(2, 0, 1, 3).reshape(sp, local_tokens, batch, heads, self.head_dim)
        out = all_to_all(out, self.group)  # now [sp (head slice: source), local tokens, batch, heads, dim]
        out = out.permute(2, 1, 0, 3, 4).reshape(batch, local_tokens, self.num_heads * self.head_dim)
        return self.proj_drop(self.proj(self.norm(out)))


class SequenceParallelViT(nn.Module):
    """A timm ``VisionTransformer`` (average pooling, no prefix tokens) whose blocks run on this
    rank's slice of the patch tokens. Each rank embeds the whole image (cheap next to the blocks)
    and keeps its slice; the slice's backward gives the embeddings the shard's share of their gradient.
    """

    def __init__(self, vit: nn.Module, groups: ParallelGroups):
        super().__init__()
        self.vit, self.group = vit, groups.sp_group
        self.sp_rank, self.sp_size = groups.sp_rank, groups.sp_size
        for block in vit.blocks:
            block.attn = UlyssesAttention(block.attn, groups.sp_group, groups.sp_size)

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        vit = self.vit
        x = vit.norm_pre(vit.patch_drop(vit._pos_embed(vit.patch_embed(x))))
        total_tokens = x.shape[1]
        # A copy, not a view: a view would keep the whole image's embeddings alive until the backward.
        x = x.chunk(self.sp_size, dim=1)[self.sp_rank].clone()
        x = vit.norm(vit.blocks(x))  # norm is Identity under avg pooling (fc_norm follows the pool)
        pooled = _AllReduceSum.apply(x.sum(dim=1), self.group) / total_tokens
        return vit.head(vit.head_drop(vit.fc_norm(pooled)))


def apply_sequence_parallel(model: nn.Module, groups: ParallelGroups) -> nn.Module:
    """The model itself for SP 1, else the SP wrapper (after ``check_sequence_parallel`` passed)."""
    if groups.sp_size == 1:
        return model
    if getattr(model, "global_pool", None) != "avg" or getattr(model, "num_prefix_tokens", 1) != 0:
        raise UsageError(
            "sequence_parallel needs a ViT with global_pool='avg' and class_token=False "
            "(e.g. model=vit_base_patch16_avg_224); got a class token or another pooling"
        )
    return SequenceParallelViT(model, groups)
