"""Sequence parallelism over a ViT's patch tokens (DeepSpeed-Ulysses for images).

Ranks ``g*sp .. g*sp+sp-1`` form sequence-parallel (SP) group ``g``: they see the same images and
each keeps ``1/sp`` of every image's patch tokens through the blocks. Attention needs every token,
so around the attention core one all-to-all turns "my tokens, all heads" into "all tokens, my
heads" and a second turns it back (Ulysses); heads split unevenly where ``sp`` does not divide them,
and the sequence (prefix tokens included) is padded to a multiple of ``sp``, the padding cut out of
attention and pooling. The head sees the pooled features (class token or mean): an all-reduce of
each shard's masked token sum over the SP group.

Gradient rule (exact, pinned by tests/test_sequence_parallel.py): the pooled features come from an
all-reduce SUM whose backward is again an all-reduce SUM (as ``torch.distributed.nn.functional``'s). Every SP
rank computes the same logits and the same loss (the full samples' loss), so each rank's gradient
of its shard's token sum is ``sp x`` the true one; parameters before the pooling get ``sp x`` their
shard's share, parameters after it (fc_norm, head) the full gradient. The mean over the SP group of
both is the exact gradient, so **the engine's ordinary gradient MEAN over the whole world
(num_workers ranks: DeepSpeed ZeRO 0-2 or DDP, no mpu, no hook) is exact**: mean over DP of the
exact per-group gradients. DeepSpeed must then count every rank as a data-parallel one
(``trainers.engines.deepspeed_config.build_deepspeed_config``'s ``train_batch_size``).
"""

from __future__ import annotations

from dataclasses import dataclass

import torch
import torch.distributed as dist
import torch.nn.functional as F
from torch import nn

from raysweep.core.errors import UsageError
from trainers.model.sequence_parallel_check import SP_POOLS


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
    """Rows (dim 0) of ``x`` scattered over the group, ``send[i]`` rows to rank i, in order; the result's
    rows are the ``receive[i]`` rows rank i sent, in rank order.  The backward sends every gradient row
    back where its value came from: the same all-to-all with the counts swapped."""

    @staticmethod
    def forward(ctx, x: torch.Tensor, group: dist.ProcessGroup, send: list[int], receive: list[int]) -> torch.Tensor:
        ctx.group, ctx.send, ctx.receive = group, send, receive
        out = x.new_empty((sum(receive), *x.shape[1:]))
        dist.all_to_all_single(out, x.contiguous(), receive, send, group=group)
        return out

    @staticmethod
    def backward(ctx, grad: torch.Tensor) -> tuple[torch.Tensor, None, None, None]:
        return _AllToAll.apply(grad, ctx.group, ctx.receive, ctx.send), None, None, None


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


def all_to_all(x: torch.Tensor, group: dist.ProcessGroup, send: list[int], receive: list[int]) -> torch.Tensor:
    return _AllToAll.apply(x, group, send, receive)


def head_counts(num_heads: int, sp: int) -> list[int]:
    """Heads per SP rank, DeepSpeed's uneven split: ``num_heads // sp`` each, one more on the first
    ``num_heads % sp`` ranks (ViT-B's 12 heads over 8 ranks: 2, 2, 2, 2, 1, 1, 1, 1)."""
    return [num_heads // sp + (1 if r < num_heads % sp else 0) for r in range(sp)]


def padded_tokens(num_tokens: int, sp: int) -> int:
    """The sequence length each SP group runs: ``num_tokens`` rounded up to a multiple of ``sp``."""
    return -(-num_tokens // sp) * sp


class UlyssesAttention(nn.Module):
    """timm's ``Attention`` on a token shard: one all-to-all of the packed q, k, v to "all tokens, this
    rank's heads", local scaled-dot-product attention, one all-to-all back.

    Heads are split as DeepSpeed splits them when ``sp`` does not divide their count (``head_counts``):
    the all-to-alls send each rank its own number of head rows.  The sequence arrives padded to a multiple
    of ``sp`` (``SequenceParallelViT``); the padding is cut off after the first all-to-all, so it is never a
    key, a value or a query, and no mask reaches ``scaled_dot_product_attention``: its fused kernels
    (flash attention among them) stay eligible.  The padded positions' outputs are zeros.

    Written on torch.distributed rather than ``deepspeed.sequence.layer.DistributedAttention``:
    that one moves q, k and v in three all-to-alls through ``deepspeed.comm``; here the packed qkv
    goes in one, and the DDP engine (no deepspeed.comm set-up) works the same.
    """

    def __init__(self, attention: nn.Module, group: dist.ProcessGroup, sp: int, sp_rank: int, num_tokens: int):
        super().__init__()
        self.qkv, self.proj, self.proj_drop = attention.qkv, attention.proj, attention.proj_drop
        self.q_norm, self.k_norm, self.norm = attention.q_norm, attention.k_norm, attention.norm
        self.num_heads, self.head_dim = attention.num_heads, attention.head_dim
        self.attn_drop_p = attention.attn_drop.p
        self.group, self.sp, self.num_tokens = group, sp, num_tokens
        self.heads = head_counts(self.num_heads, sp)
        self.mine = self.heads[sp_rank]

    def forward(self, x: torch.Tensor, attn_mask: torch.Tensor | None = None, is_causal: bool = False) -> torch.Tensor:
        if attn_mask is not None or is_causal:
            raise NotImplementedError("sequence-parallel attention takes no mask: padding is cut off, not masked")
        batch, local_tokens, _ = x.shape
        sp, mine, dim = self.sp, self.mine, self.head_dim
        qkv = self.qkv(x).reshape(batch, local_tokens, 3, self.num_heads, dim)
        # rows by head, so rank r is sent its heads' rows; it receives sp blocks of its heads, one per token slice
        qkv = all_to_all(qkv.permute(3, 1, 0, 2, 4), self.group, self.heads, [mine] * sp)
        qkv = qkv.reshape(sp, mine, local_tokens, batch, 3, dim).permute(4, 3, 1, 0, 2, 5)
        q, k, v = qkv.reshape(3, batch, mine, sp * local_tokens, dim)[:, :, :, : self.num_tokens].unbind(0)
        q, k = self.q_norm(q), self.k_norm(k)
        dropout = self.attn_drop_p if self.training else 0.0
        out = F.scaled_dot_product_attention(q, k, v, dropout_p=dropout)
        out = F.pad(out, (0, 0, 0, sp * local_tokens - self.num_tokens))  # [batch, mine, padded tokens, dim]
        # rows by token slice (destination), each slice's rows by head; back come every rank's heads for my tokens
        out = out.reshape(batch, mine, sp, local_tokens, dim).permute(2, 1, 3, 0, 4)
        out = out.reshape(sp * mine, local_tokens, batch, dim)
        out = all_to_all(out, self.group, [mine] * sp, self.heads)  # [heads, local tokens, batch, dim]
        out = out.permute(2, 1, 0, 3).reshape(batch, local_tokens, self.num_heads * dim)
        return self.proj_drop(self.proj(self.norm(out)))


class SequenceParallelViT(nn.Module):
    """A timm ``VisionTransformer`` whose blocks run on this rank's slice of the tokens.

    Each rank embeds the whole image (cheap next to the blocks): patch tokens and prefix tokens (class,
    registers) with their position embeddings, padded at the end to a multiple of ``sp``, and keeps its
    slice.  Pooling is a masked sum over each slice, all-reduced: the class token alone (``global_pool``
    'token'), or the mean of the patch tokens (prefix tokens too where timm's ``pool_include_prefix``)
    for 'avg'; padding is never pooled.  The slice's backward gives the embeddings its share of their gradient.
    """

    def __init__(self, vit: nn.Module, groups: ParallelGroups):
        super().__init__()
        self.vit, self.group = vit, groups.sp_group
        self.sp_rank, self.sp_size = groups.sp_rank, groups.sp_size
        prefix = int(vit.num_prefix_tokens)
        self.num_tokens = int(vit.patch_embed.num_patches) + prefix
        if vit.global_pool == "token":
            self.pooled = (0, 1)
        else:
            self.pooled = (0 if getattr(vit, "pool_include_prefix", False) else prefix, self.num_tokens)
        for block in vit.blocks:
            block.attn = UlyssesAttention(block.attn, groups.sp_group, groups.sp_size, groups.sp_rank, self.num_tokens)

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        vit = self.vit
        x = vit.norm_pre(vit.patch_drop(vit._pos_embed(vit.patch_embed(x))))
        if x.shape[1] != self.num_tokens:
            raise ValueError(f"{x.shape[1]} tokens where the model was built for {self.num_tokens}")
        x = F.pad(x, (0, 0, 0, padded_tokens(self.num_tokens, self.sp_size) - self.num_tokens))
        # A copy, not a view: a view would keep the whole image's embeddings alive until the backward.
        x = x.chunk(self.sp_size, dim=1)[self.sp_rank].clone()
        x = vit.norm(vit.blocks(x))
        first, end = self.pooled
        position = self.sp_rank * x.shape[1] + torch.arange(x.shape[1], device=x.device)
        pooled_here = ((position >= first) & (position < end)).to(x.dtype)
        pooled = _AllReduceSum.apply((x * pooled_here[:, None]).sum(dim=1), self.group) / (end - first)
        return vit.head(vit.head_drop(vit.fc_norm(pooled)))


def apply_sequence_parallel(model: nn.Module, groups: ParallelGroups) -> nn.Module:
    """The model itself for SP 1, else the SP wrapper (after ``check_sequence_parallel`` passed)."""
    if groups.sp_size == 1:
        return model
    if getattr(model, "global_pool", None) not in SP_POOLS or getattr(model, "attn_pool", None) is not None:
        raise UsageError(
            f"sequence_parallel needs a ViT with global_pool in {SP_POOLS} (class token or average); "
            f"got global_pool={getattr(model, 'global_pool', None)!r}"
        )
    return SequenceParallelViT(model, groups)
