"""Analytic training FLOPs of a timm ViT and the model FLOPs utilisation (MFU) they give.

Forward FLOPs count every matrix multiply at 2 FLOPs per multiply-add: the patch embedding (a
convolution with stride = kernel, so one matmul per patch), each block's linear layers (qkv, proj,
MLP fc1 and fc2) over all T tokens, the two attention matmuls (Q K^T and A V: 2 T^2 d each, d = heads x
head dim), and the head on the pooled token. Norms, softmax, GELU and residual adds are left out
(a few per mille of a ViT-B's total). Training is 3 x forward: the backward pass computes the
gradients of both the activations and the weights, each a matmul of the forward's size.

ViT-B/16 at 224 px (T = 197, 1000 classes): 33.70 GFLOP forward without the attention matmuls,
35.13 with them; per trained image (3 x forward) 101.1 and 105.4 GFLOP.
"""

from __future__ import annotations

from dataclasses import dataclass

import torch

# Dense (no sparsity) peak FLOP/s per GPU by compute precision, from NVIDIA's data sheets.
# Matched by substring of the device name, first match wins (so "H100 PCIe" precedes "H100").
PEAK_FLOPS: dict[str, dict[str, float]] = {
    "H200": {"bf16": 989e12, "fp16": 989e12, "tf32": 494e12, "fp32": 67e12},
    "H100 PCIe": {"bf16": 756e12, "fp16": 756e12, "tf32": 378e12, "fp32": 51e12},
    "H100": {"bf16": 989e12, "fp16": 989e12, "tf32": 494e12, "fp32": 67e12},
    "A100": {"bf16": 312e12, "fp16": 312e12, "tf32": 156e12, "fp32": 19.5e12},
}


def training_flops_per_sample(model: torch.nn.Module) -> float | None:
    """3 x the forward matmul FLOPs of one sample through a timm VisionTransformer; None for other models."""
    from timm.models.vision_transformer import Attention, VisionTransformer

    if not isinstance(model, VisionTransformer):
        return None
    patches = model.patch_embed.num_patches  # from the grid the model was built for (image_size included)
    tokens = patches + model.num_prefix_tokens
    conv = model.patch_embed.proj
    forward = 2.0 * patches * conv.in_channels * conv.kernel_size[0] * conv.kernel_size[1] * conv.out_channels
    for module in model.blocks.modules():
        if isinstance(module, torch.nn.Linear):
            forward += 2.0 * tokens * module.in_features * module.out_features
        elif isinstance(module, Attention):
            forward += 2 * 2.0 * tokens * tokens * module.num_heads * module.head_dim  # Q K^T and A V
    if isinstance(model.head, torch.nn.Linear):  # one pooled vector per sample
        forward += 2.0 * model.head.in_features * model.head.out_features
    return 3.0 * forward


def peak_flops(device_name: str, precision: str, peak_tflops: float = 0.0) -> float | None:
    """Dense peak FLOP/s of one rank: ``peak_tflops`` if set, else the table's; None where unknown (CPUs)."""
    if peak_tflops > 0:
        return peak_tflops * 1e12
    for name, by_precision in PEAK_FLOPS.items():
        if name in device_name:
            return by_precision.get(precision)
    return None


@dataclass(frozen=True)
class ComputeRate:
    """What one sample costs and what one rank could do at best: the two constants of the MFU."""

    flops_per_sample: float | None
    peak_flops: float | None  # per rank

    def mfu(self, throughput: float, num_workers: int) -> float | None:
        """Achieved FLOP/s of all ranks over their summed peak."""
        if self.flops_per_sample is None or self.peak_flops is None or not throughput == throughput:  # NaN
            return None
        return throughput * self.flops_per_sample / (num_workers * self.peak_flops)

    def columns(self, throughput: float, num_workers: int) -> dict:
        return {
            "flops_per_sample": self.flops_per_sample,
            "peak_flops": self.peak_flops,
            "mfu": self.mfu(throughput, num_workers),
        }
