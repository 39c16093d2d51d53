"""TF32 modes per precision, and the gradient dtype the all-reduce probe uses per engine."""

import pytest
import torch

from raysweep.core.params import TrialParams
from trainers.numerics import gradient_reduce_dtype, set_math_modes


@pytest.fixture
def restore_math_modes():
    saved = torch.backends.cuda.matmul.allow_tf32, torch.backends.cudnn.allow_tf32
    yield
    torch.backends.cuda.matmul.allow_tf32, torch.backends.cudnn.allow_tf32 = saved


@pytest.mark.parametrize(("precision", "tf32"), [("fp32", False), ("tf32", True)])
def test_fp32_turns_tf32_off_and_tf32_on_for_matmul_and_cudnn(restore_math_modes, precision, tf32):
    torch.backends.cuda.matmul.allow_tf32 = torch.backends.cudnn.allow_tf32 = not tf32
    set_math_modes(precision)
    assert torch.backends.cuda.matmul.allow_tf32 is tf32
    assert torch.backends.cudnn.allow_tf32 is tf32


@pytest.mark.parametrize(
    ("precision", "amp", "engine", "zero_stage", "dtype"),
    [
        ("fp32", "auto", "deepspeed", 0, torch.float32),
        ("bf16", "auto", "deepspeed", 0, torch.float32),  # auto = autocast for bf16: fp32 weights and gradients
        ("bf16", "autocast", "deepspeed", 2, torch.float32),
        ("fp16", "autocast", "deepspeed", 0, torch.float32),
        ("bf16", "deepspeed", "deepspeed", 0, torch.bfloat16),
        ("bf16", "deepspeed", "deepspeed", 3, torch.bfloat16),
        ("fp16", "auto", "deepspeed", 1, torch.float16),  # auto = DeepSpeed's fp16 engine
        ("fp32", "auto", "ddp", 0, torch.float32),
        ("bf16", "auto", "ddp", 0, torch.float32),
        ("fp16", "deepspeed", "ddp", 0, torch.float32),  # DDP always autocasts over fp32 weights
        ("bf16", "auto", "fsdp", 0, torch.float32),  # FSDP's reduce_dtype
        ("fp32", "auto", "fsdp", 0, torch.float32),
    ],
)
def test_probe_reduces_the_dtype_the_engine_reduces(precision, amp, engine, zero_stage, dtype):
    params = TrialParams(precision=precision, amp=amp, engine=engine, zero_stage=zero_stage, device="gpu")
    assert gradient_reduce_dtype(params) is dtype
