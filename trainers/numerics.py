"""The arithmetic a trial runs in: TF32 math modes and the dtypes its gradients are reduced in."""

from __future__ import annotations

import torch

from raysweep.core.params import TrialParams

LOW_PRECISION = {"bf16": torch.bfloat16, "fp16": torch.float16}


def set_math_modes(precision: str) -> None:
    """fp32 is true fp32 (TF32 off for matmuls and cuDNN convolutions); tf32 turns both on.

    Called once at worker start, before the model runs. bf16 and fp16 keep torch's defaults:
    their matmuls run in the low precision, and what stays fp32 is not what they compare.
    """
    if precision in ("fp32", "tf32"):
        tf32 = precision == "tf32"
        torch.backends.cuda.matmul.allow_tf32 = tf32
        torch.backends.cudnn.allow_tf32 = tf32


# The modules whose parameters DeepSpeed's torch autocast marks for low-precision communication
# (deepspeed.runtime.torch_autocast.LOWER_PRECISION_SAFE_MODULES, the default of its config's
# lower_precision_safe_modules, matched by exact class); tests pin the two equal.
AUTOCAST_COMM_MODULES = (torch.nn.Linear, torch.nn.Conv1d, torch.nn.Conv2d, torch.nn.Conv3d)


def gradient_reduction(params: TrialParams, model: torch.nn.Module) -> dict[torch.dtype, int]:
    """The gradient elements the engine's collectives carry per optimizer step, by the dtype they carry them in.

    * DeepSpeed's own bf16/fp16 engine (``amp_mode == "deepspeed"``), every ZeRO stage: all in the low
      precision (its ``communication_data_type`` defaults to it).
    * DeepSpeed under torch autocast, ZeRO 1-3: ZeRO buckets each gradient by its parameter's
      ``comm_dtype``, which autocast's setup gives the parameters of ``AUTOCAST_COMM_MODULES`` (the
      autocast dtype); the rest (norms, embeddings, tokens) keep fp32.
    * DeepSpeed under torch autocast, ZeRO 0: the engine's all-reduce casts every bucket to its
      ``communication_data_type``, fp32 with its bf16/fp16 sections off.
    * DDP: fp32 (autocast keeps the weights, so the gradients, fp32; no communication hook).
    * FSDP2: fp32 (``MixedPrecisionPolicy(reduce_dtype=torch.float32)``; fp32 weights otherwise).
    """
    trained = [(module, p) for module in model.modules() for p in module.parameters(recurse=False) if p.requires_grad]
    if params.engine == "deepspeed" and params.amp_mode == "deepspeed":
        return {LOW_PRECISION[params.precision]: sum(p.numel() for _, p in trained)}
    reduction: dict[torch.dtype, int] = {}
    for module, p in trained:
        low = params.engine == "deepspeed" and params.uses_autocast and params.zero_stage > 0
        dtype = LOW_PRECISION[params.precision] if low and type(module) in AUTOCAST_COMM_MODULES else torch.float32
        reduction[dtype] = reduction.get(dtype, 0) + p.numel()
    return reduction
