"""Activation checkpointing: a transformer block keeps only its input for the backward and runs its forward
again there, trading about a third more compute in that block for its activations' memory.

``activation_checkpointing=k`` checkpoints every k-th block (blocks 0, k, 2k, ...): 1 every block, 2 half of
them.  A checkpointed block is the same module with its forward run under ``torch.utils.checkpoint``
(non-reentrant): its class is swapped for a subclass, as FSDP2's ``fully_shard`` swaps it, so parameter
names, checkpoints and the engines' view of the model are unchanged.  It composes with DDP, DeepSpeed ZeRO,
FSDP2 (the block's parameters are gathered again for the recomputation by FSDP's pre-backward hook) and
sequence parallelism (the recomputation repeats the block's all-to-alls, in the same order on every rank).
FLOPs and MFU count the model's work without the recomputation, as MFU is defined.
"""

from __future__ import annotations

from torch import nn
from torch.utils.checkpoint import checkpoint

from raysweep.core.errors import UsageError


class CheckpointedForward:
    """Mixed in before a block's own class: its forward, run under non-reentrant checkpointing."""

    def forward(self, *args, **kwargs):
        return checkpoint(super().forward, *args, use_reentrant=False, **kwargs)


_CLASSES: dict[type, type] = {}


def checkpointed_class(cls: type) -> type:
    """``cls`` with ``CheckpointedForward`` first in its order: one class per block class."""
    if cls not in _CLASSES:
        _CLASSES[cls] = type(f"Checkpointed{cls.__name__}", (CheckpointedForward, cls), {})
    return _CLASSES[cls]


def model_blocks(model: nn.Module) -> nn.Module:
    """The repeated blocks of a timm ViT (``blocks``) or of its sequence-parallel wrapper (``vit.blocks``)."""
    inner = getattr(model, "vit", model)
    blocks = getattr(inner, "blocks", None)
    if not isinstance(blocks, (nn.Sequential, nn.ModuleList)):
        raise UsageError(
            f"activation_checkpointing checkpoints transformer blocks and {type(inner).__name__} has no `blocks` "
            "list; use a timm ViT or activation_checkpointing=0"
        )
    return blocks


def apply_activation_checkpointing(model: nn.Module, every: int) -> nn.Module:
    """``model`` with every ``every``-th block checkpointed (0: none), in place; returned for chaining."""
    if not every:
        return model
    for i, block in enumerate(model_blocks(model)):
        if i % every == 0 and not isinstance(block, CheckpointedForward):
            block.__class__ = checkpointed_class(type(block))
    return model
