"""TF32 modes per precision, and the gradients (elements per dtype) the all-reduce probe moves per engine."""

import pytest
import torch

from raysweep.core.params import TrialParams
from trainers.numerics import AUTOCAST_COMM_MODULES, gradient_reduction, set_math_modes


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


class TinyViTParts(torch.nn.Module):
    """What a ViT's gradients come from: a patch conv, a token, a norm, a linear layer."""

    def __init__(self):
        super().__init__()
        self.patch = torch.nn.Conv2d(3, 2, kernel_size=2)  # 2 x 3 x 2 x 2 + 2 = 26
        self.token = torch.nn.Parameter(torch.zeros(1, 1, 2))  # 2
        self.norm = torch.nn.LayerNorm(2)  # 4
        self.head = torch.nn.Linear(2, 5)  # 15
        self.frozen = torch.nn.Linear(2, 2).requires_grad_(False)  # no gradient, never reduced


FP32, BF16, FP16 = torch.float32, torch.bfloat16, torch.float16
LOW_MODULES, OTHERS = 26 + 15, 2 + 4  # Conv2d and Linear; the token and the norm


@pytest.mark.parametrize(
    ("precision", "amp", "engine", "zero_stage", "reduction"),
    [
        ("fp32", "auto", "deepspeed", 0, {FP32: LOW_MODULES + OTHERS}),
        ("fp32", "auto", "deepspeed", 3, {FP32: LOW_MODULES + OTHERS}),
        # torch autocast (bf16's default), ZeRO 0: the engine's all-reduce in its fp32 communication dtype
        ("bf16", "auto", "deepspeed", 0, {FP32: LOW_MODULES + OTHERS}),
        ("fp16", "autocast", "deepspeed", 0, {FP32: LOW_MODULES + OTHERS}),
        # torch autocast, ZeRO 1-3: Linear and Conv gradients in bf16 (their comm_dtype), the rest fp32
        ("bf16", "auto", "deepspeed", 1, {BF16: LOW_MODULES, FP32: OTHERS}),
        ("bf16", "autocast", "deepspeed", 2, {BF16: LOW_MODULES, FP32: OTHERS}),
        ("bf16", "autocast", "deepspeed", 3, {BF16: LOW_MODULES, FP32: OTHERS}),
        # DeepSpeed's own bf16/fp16 engine: everything in the low precision, every stage
        ("bf16", "deepspeed", "deepspeed", 0, {BF16: LOW_MODULES + OTHERS}),
        ("bf16", "deepspeed", "deepspeed", 3, {BF16: LOW_MODULES + OTHERS}),
        ("fp16", "auto", "deepspeed", 1, {FP16: LOW_MODULES + OTHERS}),  # auto = DeepSpeed's fp16 engine
        # DDP autocasts over fp32 weights: fp32 gradients, reduced as they are
        ("fp32", "auto", "ddp", 0, {FP32: LOW_MODULES + OTHERS}),
        ("bf16", "auto", "ddp", 0, {FP32: LOW_MODULES + OTHERS}),
        ("fp16", "deepspeed", "ddp", 0, {FP32: LOW_MODULES + OTHERS}),
        # FSDP2: its reduce_dtype, fp32
        ("bf16", "auto", "fsdp", 0, {FP32: LOW_MODULES + OTHERS}),
        ("fp32", "auto", "fsdp", 0, {FP32: LOW_MODULES + OTHERS}),
    ],
)
def test_probe_reduces_what_the_engine_reduces(precision, amp, engine, zero_stage, reduction):
    params = TrialParams(precision=precision, amp=amp, engine=engine, zero_stage=zero_stage, device="gpu")
    assert gradient_reduction(params, TinyViTParts()) == reduction


def test_bf16_autocast_under_zero_moves_fewer_bytes_than_fp32():
    model = TinyViTParts()
    fp32 = gradient_reduction(TrialParams(precision="fp32", zero_stage=2, device="gpu"), model)
    bf16 = gradient_reduction(TrialParams(precision="bf16", zero_stage=2, device="gpu"), model)
    assert sum(n * d.itemsize for d, n in fp32.items()) == 4 * (LOW_MODULES + OTHERS) == 188
    assert sum(n * d.itemsize for d, n in bf16.items()) == 2 * LOW_MODULES + 4 * OTHERS == 106


def test_the_low_precision_modules_are_deepspeeds_own():
    from deepspeed.runtime.torch_autocast import LOWER_PRECISION_SAFE_MODULES

    assert list(AUTOCAST_COMM_MODULES) == LOWER_PRECISION_SAFE_MODULES
