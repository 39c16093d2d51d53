"""What a rank runs on: node, device name, peak memory."""

from __future__ import annotations

import ctypes
import gc
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


def live_tensor_bytes() -> int:
    """The bytes of every storage a live tensor holds (each storage once), after a full collection: what a
    process still holds, on any device, independent of the allocator's caching.

    Plain tensors and parameters only: a subclass either wraps plain ones (FSDP2's DTensor) or has no
    storage of its own (the fake tensors torch.compile's tracing leaves).
    """
    gc.collect()
    storages = {}
    for obj in gc.get_objects():
        if type(obj) in (torch.Tensor, torch.nn.Parameter) and not obj.is_meta:
            storage = obj.untyped_storage()
            storages[storage.data_ptr()] = storage.nbytes()
    return sum(storages.values())


def peak_memory_gib(device: torch.device) -> float:
    """Peak allocated device memory on GPUs; peak resident set size of this process on CPUs.

    On CPUs the peak is Linux's ``VmHWM``, which ``reset_peak_memory`` can lower again; ``ru_maxrss``
    (never lowered within a process) where there is no ``/proc``.
    """
    if device.type == "cuda":
        return torch.cuda.max_memory_allocated(device) / 2**30
    try:
        with open("/proc/self/status") as f:
            for line in f:
                if line.startswith("VmHWM:"):
                    return int(line.split()[1]) / 2**20  # KiB
    except OSError:
        pass
    return resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 2**20  # Linux reports KiB


def reset_peak_memory(device: torch.device) -> None:
    """Start a new peak at what this process holds now, after freeing what is no longer referenced.

    A process that runs trials one after another calls it between them, so each trial's peak is its own.
    On CPUs, freed heap goes back to the system first (glibc keeps it otherwise), then writing 5 to
    ``clear_refs`` sets ``VmHWM`` to the current resident size.
    """
    gc.collect()
    if device.type == "cuda":
        torch.cuda.empty_cache()
        torch.cuda.reset_peak_memory_stats(device)
        return
    try:
        ctypes.CDLL("libc.so.6").malloc_trim(0)
        with open("/proc/self/clear_refs", "w") as f:
            f.write("5")
    except (OSError, AttributeError):  # not Linux with glibc: the peak stays the process's
        pass
