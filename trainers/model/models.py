"""Models by name: any timm model, plus small presets that train in seconds on a CPU.

A preset is a timm architecture with its size arguments fixed, so ``create_model`` stays
the one way a model is made (as in timm: a registry of names, one factory).
"""

from __future__ import annotations

import re
from typing import Any

from raysweep.core.errors import UsageError
from raysweep.core.names import did_you_mean

# name -> (timm architecture, keyword arguments). Each preset states its input size, patch size and heads
# (the architecture's own where they are its defaults), so a sweep's plan knows them without timm
# (``trainers.model.sequence_parallel_check.declared_token_shape``).
PRESETS: dict[str, tuple[str, dict[str, Any]]] = {
    # The CPU default: a 4-block ViT on 32x32 inputs with 4x4 patches (64 tokens).
    "vit_micro_patch4_32": (
        "vit_tiny_patch16_224",
        {"img_size": 32, "patch_size": 4, "embed_dim": 96, "depth": 4, "num_heads": 3},
    ),
    # CIFAR-native ViT-S: 32x32 inputs, 4x4 patches.
    "vit_small_patch4_32": ("vit_small_patch16_224", {"img_size": 32, "patch_size": 4, "num_heads": 6}),
    # Without class token, average-pooled: ViT-B/16 (12 heads; 196, 784, 3136 tokens at 224, 448, 896 px) and
    # a CPU one: the seq_parallel space's models (sequence parallelism takes class-token ViTs too).
    "vit_base_patch16_avg_224": (
        "vit_base_patch16_224",
        {"img_size": 224, "patch_size": 16, "num_heads": 12, "class_token": False, "global_pool": "avg"},
    ),
    "vit_micro_avg_patch4_32": (
        "vit_tiny_patch16_224",
        {"img_size": 32, "patch_size": 4, "embed_dim": 96, "depth": 4, "num_heads": 4, "class_token": False}
        | {"global_pool": "avg"},
    ),
}


# timm's ViT names state their patch size (vit_base_patch16_224).
PATCH_IN_NAME = re.compile(r"patch(\d+)")


def declared_patch_size(name: str) -> int | None:
    """The patch size a preset declares or a timm name states, without timm; None where neither does."""
    if name in PRESETS:
        return int(PRESETS[name][1]["patch_size"])
    found = PATCH_IN_NAME.search(name)
    return int(found.group(1)) if found else None


def check_model_name(name: str) -> None:
    if name in PRESETS:
        return  # no timm import: the driver of a preset's sweep never needs timm (its import takes seconds)
    import timm

    if timm.is_model(name):
        return
    hint = did_you_mean(name, [*PRESETS, *timm.list_models()])
    raise UsageError(
        f"model={name!r} is neither a raysweep preset ({', '.join(PRESETS)}) nor a timm model{hint} "
        "(all: timm.list_models())"
    )


def create_model(name: str, num_classes: int, image_size: int = 0, in_chans: int = 3):
    """A freshly initialised model (no downloaded weights) for ``num_classes`` classes of ``in_chans`` images."""
    import timm

    arch, kwargs = PRESETS.get(name, (name, {}))
    kwargs = dict(kwargs, in_chans=in_chans)
    if image_size:
        kwargs["img_size"] = image_size
    return timm.create_model(arch, pretrained=False, num_classes=num_classes, **kwargs)


def native_image_size(name: str) -> int:
    """The input resolution the model is built for when ``image_size`` is 0."""
    import timm

    arch, kwargs = PRESETS.get(name, (name, {}))
    if "img_size" in kwargs:
        return int(kwargs["img_size"])
    return int(timm.get_pretrained_cfg(arch).input_size[-1])
