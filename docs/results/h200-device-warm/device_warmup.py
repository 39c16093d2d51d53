"""A fresh rank's one-time device costs, paid on a thread while the rank imports timm and DeepSpeed.

Tried for issue 13 and dropped (README.md here): this is the module as it was measured, when it was
``trainers/device_warmup.py`` (cd1ba42); probe.py and memory.py import it from here.

A new process's first CUDA calls create the NCCL communicator (on the first collective), the
cuBLAS/cuBLASLt and cuDNN handles, and load each kernel on its first launch: seconds that a rank
otherwise pays inside its first trial's engine build and first step, after its imports.  torch
releases the GIL while its operators run, so these calls overlap the imports (Python, holding it).
Its tensors are freed (what stays is what any first step makes: the libraries' handles and cuBLAS's
workspace) and it draws no random numbers; a trial's seed and the device's peak-memory counter are
set when the trial starts.  The thread issues the process group's first collective; the caller
joins it before issuing any of its own (collectives must come in the same order on every rank).
"""

from __future__ import annotations

import sys
import threading
from contextlib import nullcontext

import torch
import torch.distributed as dist
import torch.nn.functional as F


def warm_device_in_background(device: torch.device) -> threading.Thread | None:
    """Start ``warm_device(device)`` on a thread, or None on a CPU rank (nothing there takes long to
    start); join it before the caller's first collective."""
    if device.type != "cuda":
        return None
    thread = threading.Thread(target=warm_device_or_say_why_not, args=(device,), name="warm-device", daemon=True)
    thread.start()
    return thread


def warm_device_or_say_why_not(device: torch.device) -> None:
    try:
        warm_device(device)
    except Exception as e:  # it only saves time: the first trial pays these costs itself instead
        print(f"raysweep: the device warm-up of {device} failed ({type(e).__name__}: {e})", file=sys.stderr, flush=True)


def warm_device(device: torch.device) -> None:
    """Run once, on tiny tensors, the kinds of kernels a ViT's training step runs on ``device``."""
    cuda = device.type == "cuda"
    with torch.cuda.device(device) if cuda else nullcontext():
        if dist.is_initialized():
            dist.all_reduce(torch.zeros(1, device=device))  # NCCL makes its communicator on the first one
        weight = torch.ones(64, 64, device=device)
        for autocast in (torch.cuda.is_bf16_supported() if cuda else True, False):
            with torch.autocast(device.type, dtype=torch.bfloat16, enabled=autocast):
                images = torch.ones(2, 3, 32, 32, device=device, requires_grad=True)
                patches = F.conv2d(images, torch.ones(8, 3, 16, 16, device=device), stride=16)  # cuDNN
                tokens = patches.flatten(2).transpose(1, 2).repeat(1, 1, 8)  # (2, 4, 64)
                q = F.linear(F.layer_norm(tokens, (64,)), weight).view(2, 4, 2, 32).transpose(1, 2)  # cuBLAS
                attended = F.scaled_dot_product_attention(q, q, q).transpose(1, 2).reshape(2, 4, 64)
                logits = F.gelu(attended).mean(1)
                loss = F.cross_entropy(logits, torch.zeros(2, dtype=torch.long, device=device))
            loss.backward()
        if cuda:
            torch.cuda.synchronize(device)
