"""The arithmetic a trial runs in: TF32 math modes and the dtype its gradients are reduced in."""

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


def gradient_reduce_dtype(params: TrialParams) -> torch.dtype:
    """The dtype of the gradients the engine's collectives carry.

    Only DeepSpeed's own bf16/fp16 engine (``amp_mode == "deepspeed"``) holds low-precision gradients
    and reduces them as such (its ``communication_data_type``). Under torch autocast the weights, and so
    the gradients, are fp32; DDP reduces the fp32 gradients of its fp32 weights, and FSDP reduces in fp32
    (its ``reduce_dtype``).
    """
    if params.engine == "deepspeed" and params.amp_mode == "deepspeed":
        return LOW_PRECISION[params.precision]
    return torch.float32
