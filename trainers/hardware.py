"""What a rank runs on: node, device name, peak memory."""

from __future__ import annotations

import platform
import resource
import socket

import torch


def device_name(device: torch.device) -> str:
    if device.type == "cuda":
        return torch.cuda.get_device_name(device)
    try:
        with open("/proc/cpuinfo") as f:
            for line in f:
                if line.startswith("model name"):
                    return "cpu: " + line.split(":", 1)[1].strip()
    except OSError:
        pass
    return "cpu: " + (platform.processor() or platform.machine())


def node_name() -> str:
    """Host name and Ray node id: several Ray nodes may share one host."""
    import ray

    return f"{socket.gethostname()}/{ray.get_runtime_context().get_node_id()[:8]}"


def peak_memory_gib(device: torch.device) -> float:
    """Peak allocated device memory on GPUs; peak resident set size of this process on CPUs."""
    if device.type == "cuda":
        return torch.cuda.max_memory_allocated(device) / 2**30
    return resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 2**20  # Linux reports KiB
