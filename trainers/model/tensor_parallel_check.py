"""Whether a trial's tensor-parallel degree fits its model and engine, checked before it starts.

Each TP rank takes ``heads / tp`` whole attention heads and ``1 / tp`` of the MLP's hidden units, so the degree
must divide the head count, the embedding width and the MLP width (timm's ViT: ``mlp_ratio x`` the width).
"""

from __future__ import annotations

from dataclasses import dataclass

from raysweep.core.errors import UsageError
from raysweep.core.params import TP_ENGINES, TrialParams

# timm's VisionTransformer default MLP ratio, for a preset that does not state its own.
TIMM_MLP_RATIO = 4.0


@dataclass(frozen=True)
class WidthShape:
    """What TP splits: attention heads, the embedding width (qkv and proj) and the MLP's hidden width."""

    num_heads: int
    embed_dim: int
    mlp_hidden: int


def check_tensor_parallel(tp: int, shape: WidthShape, engine: str, num_workers: int, model: str) -> None:
    """Raise UsageError, one line naming the field, unless ``tp`` can split this trial's model."""
    if tp == 1:
        return
    if num_workers % tp:
        raise UsageError(f"num_workers={num_workers} is not a multiple of tensor_parallel={tp}")
    if engine not in TP_ENGINES:
        raise UsageError(f"tensor_parallel={tp} needs engine in {', '.join(TP_ENGINES)}, got engine={engine}")
    for name, size in (("attention heads", shape.num_heads), ("embedding width", shape.embed_dim)):
        if size % tp:
            raise UsageError(f"tensor_parallel={tp} does not divide the {size} {name} of {model}; use a divisor")
    if shape.mlp_hidden % tp:
        raise UsageError(
            f"tensor_parallel={tp} does not divide the {shape.mlp_hidden} MLP hidden units of {model}; use a divisor"
        )


def width_shape(model_name: str) -> WidthShape:
    """Heads and widths of a raysweep preset or timm ViT, read off a copy built on the meta device (no memory)."""
    import torch

    from trainers.model.models import create_model

    with torch.device("meta"):
        vit = create_model(model_name, num_classes=1)
    blocks = getattr(vit, "blocks", None)
    if blocks is None or not hasattr(blocks[0], "attn") or not hasattr(blocks[0].attn, "qkv"):
        raise UsageError(f"tensor_parallel needs a timm VisionTransformer; model={model_name!r} is not one")
    block = blocks[0]
    return WidthShape(int(block.attn.num_heads), int(block.attn.qkv.in_features), int(block.mlp.fc1.out_features))


def declared_width_shape(model_name: str) -> WidthShape | None:
    """Heads and widths of a raysweep preset that states them, without timm; None for other models."""
    from trainers.model.models import PRESETS

    if model_name not in PRESETS or "embed_dim" not in PRESETS[model_name][1]:
        return None
    kwargs = PRESETS[model_name][1]
    embed = kwargs["embed_dim"]
    return WidthShape(kwargs["num_heads"], embed, int(embed * kwargs.get("mlp_ratio", TIMM_MLP_RATIO)))


def check_trial(params: TrialParams) -> None:
    """The planner's check: reads the model's shape only when TP is on."""
    if params.tensor_parallel == 1:
        return
    check_tensor_parallel(
        params.tensor_parallel, width_shape(params.model), params.engine, params.num_workers, f"model={params.model}"
    )
