"""Analytic ViT training FLOPs against torch's FLOP counter, the peak table, and the MFU formula."""

import pytest
import timm
import torch
from torch.utils.flop_counter import FlopCounterMode

from trainers.measure.flops import ComputeRate, peak_flops, training_flops_per_sample


def counted_training_flops(model: torch.nn.Module, image_size: int) -> float:
    for module in model.modules():
        if hasattr(module, "fused_attn"):
            module.fused_attn = False  # explicit Q K^T and A V matmuls, which the counter sees
    with FlopCounterMode(display=False) as counter:
        model(torch.randn(1, 3, image_size, image_size))
    return 3.0 * counter.get_total_flops()


@pytest.mark.parametrize("image_size", [32, 48])  # 48: not the size the architecture was named for
def test_formula_matches_torch_flop_counter_within_one_percent(image_size):
    model = timm.create_model(
        "vit_tiny_patch16_224", num_classes=10, img_size=image_size, patch_size=4, embed_dim=96, depth=2, num_heads=3
    )
    counted = counted_training_flops(model, image_size)
    assert training_flops_per_sample(model) == pytest.approx(counted, rel=0.01)


def test_vit_b16_224_is_105_4_gflop_per_trained_image():
    model = timm.create_model("vit_base_patch16_224", num_classes=1000)
    # 3 x (33.697 GFLOP of linear layers and patch embedding + 1.431 GFLOP of attention matmuls)
    assert training_flops_per_sample(model) / 1e9 == pytest.approx(105.38, abs=0.01)


def test_models_other_than_vit_have_no_analytic_count():
    assert training_flops_per_sample(torch.nn.Linear(3, 3)) is None


def test_peak_by_device_name_and_precision():
    assert peak_flops("NVIDIA H200", "bf16") == 989e12
    assert peak_flops("NVIDIA H100 80GB HBM3", "tf32") == 494e12
    assert peak_flops("NVIDIA H100 PCIe", "bf16") == 756e12
    assert peak_flops("NVIDIA A100-SXM4-80GB", "fp32") == 19.5e12
    assert peak_flops("cpu: AMD EPYC 7763", "fp32") is None
    assert peak_flops("cpu: AMD EPYC 7763", "fp32", peak_tflops=2.5) == 2.5e12


def test_mfu_is_throughput_times_flops_over_ranks_times_peak():
    rate = ComputeRate(flops_per_sample=105.4e9, peak_flops=989e12)
    # 2 ranks at 2000 img/s in all: 2.108e14 FLOP/s of 1.978e15
    assert rate.mfu(2000.0, 2) == pytest.approx(2000 * 105.4e9 / (2 * 989e12))
    assert rate.columns(2000.0, 2)["peak_flops"] == 989e12
    assert ComputeRate(105.4e9, None).mfu(2000.0, 2) is None
    assert rate.mfu(float("nan"), 2) is None
