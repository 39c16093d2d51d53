"""A fresh rank's one-time device costs, paid on a thread while its main thread imports timm and DeepSpeed.

A new process's first CUDA calls create the context, the NCCL communicator (on the first
collective), the cuBLAS/cuBLASLt and cuDNN handles and load each kernel on its first launch:
seconds that a rank otherwise pays inside its first trial's engine build and first step, one after
another, after its imports.  These calls run in native code that releases the GIL, so they overlap
the imports (Python, holding it) nearly for free.  Nothing the thread makes outlives it: its
tensors are freed and it draws no random numbers (a trial's seed and the device's peak-memory
counter are set when the trial starts).  The thread issues the process group's one collective
here; the caller joins it before the trial issues any (collectives must come in the same order on
every rank).
"""

from __future__ import annotations

import threading

import torch
import torch.distributed as dist
import torch.nn.functional as F


def warm_device_in_background(device: torch.device) -> threading.Thread | None:
    """Start ``warm_device(device)`` on a thread (None on a CPU rank: nothing there is worth it); join it
    before the first collective of the caller's own."""
    if device.type != "cuda":
        return None
    thread = threading.Thread(target=warm_device, args=(device,), name="warm-device", daemon=True)
    thread.start()
    return thread


def warm_device(device: torch.device) -> None:
    """Create what a ViT's first training step needs on ``device`` once per process, on tiny tensors."""
    with torch.cuda.device(device):
        x = torch.ones(64, 64, device=device)
        if dist.is_initialized():
            dist.all_reduce(torch.zeros(1, device=device))  # NCCL makes its communicator on the first one
        for autocast in (torch.cuda.is_bf16_supported(), False):
            with torch.autocast("cuda", dtype=torch.bfloat16, enabled=autocast):
                images = torch.ones(2, 3, 32, 32, device=device, requires_grad=True)
                patches = F.conv2d(images, torch.ones(8, 3, 16, 16, device=device), stride=16)  # cuDNN
                tokens = patches.flatten(2).transpose(1, 2).repeat(1, 1, 8)  # (2, 4, 64)
                q = F.linear(F.layer_norm(tokens, (64,)), x).view(2, 4, 2, 32).transpose(1, 2)  # cuBLAS
                attended = F.scaled_dot_product_attention(q, q, q).transpose(1, 2).reshape(2, 4, 64)
                loss = F.cross_entropy(F.gelu(attended).mean(1), torch.zeros(2, dtype=torch.long, device=device))
            loss.backward()
        torch.cuda.synchronize(device)
