"""Whether a trial's sequence-parallel degree fits its model and engine, checked before it starts.

Supported: any token count and prefix tokens (class, registers; padded to a multiple of the degree), any
head count of at least the degree (split unevenly where it does not divide), class-token or average
pooling; engine=deepspeed with ZeRO 0, 1, 2 and engine=ddp (their gradient mean over all ranks is
exact, see trainers/model/sequence_parallel.py). Refused: ZeRO-3 (it gathers a module's parameters when that
module runs, and the SP forward reads the position embedding outside any submodule's forward) and
engine=fsdp (not built for it yet).
"""

from __future__ import annotations

from dataclasses import dataclass

from raysweep.core.errors import UsageError
from raysweep.core.params import SP_ZERO_STAGES, TrialParams

SP_ENGINES = ("deepspeed", "ddp")
SP_POOLS = ("token", "avg")  # the pools whose pooled tokens SP can gather: class token or average


@dataclass(frozen=True)
class TokenShape:
    """What SP splits: attention heads and tokens per image (patches plus class/register tokens)."""

    num_heads: int
    num_tokens: int
    prefix_tokens: int
    global_pool: str


def check_sequence_parallel(
    sp: int, shape: TokenShape, zero_stage: int, engine: str, num_workers: int, model: str = "the model"
) -> None:
    """Raise UsageError, one line naming the field, unless ``sp`` can split this trial."""
    if sp == 1:
        return
    if num_workers % sp:
        raise UsageError(f"num_workers={num_workers} is not a multiple of sequence_parallel={sp}")
    if engine not in SP_ENGINES:
        raise UsageError(f"sequence_parallel={sp} needs engine in {SP_ENGINES}, got engine={engine!r}")
    if engine == "deepspeed" and zero_stage not in SP_ZERO_STAGES:
        raise UsageError(f"sequence_parallel={sp} supports zero_stage in {SP_ZERO_STAGES}, got zero_stage={zero_stage}")
    if shape.global_pool not in SP_POOLS:
        raise UsageError(
            f"sequence_parallel={sp} needs a ViT that pools its class token or averages its tokens; {model} has "
            f"global_pool={shape.global_pool!r}: use global_pool in {SP_POOLS}"
        )
    if sp > shape.num_heads:
        raise UsageError(
            f"sequence_parallel={sp} exceeds the {shape.num_heads} attention heads of {model}: every SP rank "
            f"attends with at least one head"
        )


def token_shape(model_name: str, image_size: int = 0) -> TokenShape:
    """Heads and tokens of a raysweep preset or timm ViT, read off a copy built on the meta device (no memory)."""
    import torch

    from trainers.model.models import create_model

    with torch.device("meta"):
        vit = create_model(model_name, num_classes=1, image_size=image_size)
    if not hasattr(vit, "patch_embed") or not hasattr(vit, "blocks"):
        raise UsageError(f"sequence_parallel needs a timm VisionTransformer; model={model_name!r} is not one")
    prefix = int(getattr(vit, "num_prefix_tokens", 0))
    return TokenShape(
        num_heads=int(vit.blocks[0].attn.num_heads),
        num_tokens=int(vit.patch_embed.num_patches) + prefix,
        prefix_tokens=prefix,
        global_pool=str(getattr(vit, "global_pool", "")) if getattr(vit, "attn_pool", None) is None else "map",
    )


def declared_token_shape(model_name: str, image_size: int = 0) -> TokenShape | None:
    """Heads and tokens of a raysweep preset from its declared arguments, without timm; None for other models."""
    from trainers.model.models import PRESETS

    if model_name not in PRESETS:
        return None
    _, kwargs = PRESETS[model_name]
    size, patch = image_size or kwargs["img_size"], kwargs["patch_size"]
    prefix = 1 if kwargs.get("class_token", True) else 0
    return TokenShape(
        num_heads=kwargs["num_heads"],
        num_tokens=(size // patch) ** 2 + prefix,
        prefix_tokens=prefix,
        global_pool=kwargs.get("global_pool", "token"),
    )


def check_trial(params: TrialParams) -> None:
    """The planner's check: reads the model's shape only when SP is on."""
    if params.sequence_parallel == 1:
        return
    shape = token_shape(params.model, params.image_size)
    check_sequence_parallel(
        params.sequence_parallel, shape, params.zero_stage, params.engine, params.num_workers, f"model={params.model}"
    )
