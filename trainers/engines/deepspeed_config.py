"""The DeepSpeed config of a trial, derived from its parameters alone."""

from __future__ import annotations

from typing import Any

from raysweep.core.params import TrialParams

# Large enough that DeepSpeed's own per-step logging never fires during a trial.
QUIET_STEPS = 10**9
AUTOCAST_DTYPES = {"bf16": "bfloat16", "fp16": "float16"}
# Gradients are clipped to this global norm by both engines (DDPEngine applies it itself), so the
# engine space compares the same arithmetic; stated rather than left to DeepSpeed's default (1.0 in 0.19).
GRAD_CLIP_NORM = 1.0


def build_deepspeed_config(params: TrialParams) -> dict[str, Any]:
    """``train_batch_size = micro_batch_per_worker x grad_accum_steps x num_workers``, as DeepSpeed checks."""
    return {
        # DeepSpeed counts every rank as a data-parallel replica; under sequence parallelism the ranks of
        # one group share their samples, so its batch is the replicas' batch times the SP degree.
        "train_batch_size": params.train_batch_size * params.sequence_parallel,
        "train_micro_batch_size_per_gpu": params.effective_micro_batch,
        "gradient_accumulation_steps": params.grad_accum_steps,
        # Either torch autocast over fp32 weights (fused fp32 optimizer, as plain PyTorch AMP) or
        # DeepSpeed's own low-precision engine (bf16/fp16 weights, fp16 with dynamic loss scaling).
        "torch_autocast": {"enabled": params.uses_autocast, "dtype": AUTOCAST_DTYPES.get(params.precision, "bfloat16")},
        "bf16": {"enabled": params.precision == "bf16" and not params.uses_autocast},
        "fp16": {
            "enabled": params.precision == "fp16" and not params.uses_autocast,
            "loss_scale": 0,
            "initial_scale_power": 16,
        },
        "zero_optimization": {
            "stage": params.zero_stage,
            # Overlap the gradient reduction with the backward pass, in buckets.
            "overlap_comm": params.zero_stage > 0,
            "contiguous_gradients": params.zero_stage > 0,
        },
        # The optimizer comes from timm (AdamW, SGD, LAMB) and is handed to DeepSpeed.
        "zero_allow_untested_optimizer": True,
        "gradient_clipping": GRAD_CLIP_NORM,
        "steps_per_print": QUIET_STEPS,
        # DeepSpeed's throughput timer synchronises the device at every step's start and end,
        # stalling the queue of kernels; the trial times itself with CUDA events instead.
        "timers": {"throughput": {"enabled": False, "synchronized": False}},
        "wall_clock_breakdown": False,
    }
