"""Energy a rank's GPU used over the timed steps, from NVML's total-energy counter.

NVML (``nvmlDeviceGetTotalEnergyConsumption``, Volta and later) counts the millijoules a GPU has
used since the driver loaded; the difference across the timed window is the window's energy. It
covers the whole board, so a GPU shared with other work would count that work too. There is no
such counter on CPUs, on older GPUs, on MIG slices, or without the ``nvidia-ml-py`` package
(module ``pynvml``): there the energy is None.
"""

from __future__ import annotations

from collections.abc import Callable
from types import ModuleType

import torch

MillijouleReader = Callable[[], int]


class EnergyWindow:
    """``start()`` and ``stop()`` around a window (after the device has finished what was queued)."""

    def __init__(self, read_mj: MillijouleReader | None):
        self.read_mj = read_mj
        self.started_mj: int | None = None

    def start(self) -> None:
        self.started_mj = self.read_mj() if self.read_mj else None

    def stop(self) -> float | None:
        """Joules since ``start()``; None where there is no counter."""
        if self.started_mj is None:
            return None
        return (self.read_mj() - self.started_mj) / 1000.0


def energy_window(device: torch.device) -> EnergyWindow:
    """A window over this rank's GPU counter, or one that measures nothing (CPUs, no pynvml)."""
    if device.type != "cuda":
        return EnergyWindow(None)
    try:
        import pynvml
    except ImportError:
        return EnergyWindow(None)
    return EnergyWindow(nvml_energy_reader(pynvml, str(torch.cuda.get_device_properties(device).uuid)))


def nvml_energy_reader(nvml: ModuleType, cuda_uuid: str) -> MillijouleReader | None:
    """The counter of the GPU whose UUID CUDA reports, or None where NVML has none for it.

    The UUID names the physical GPU whatever CUDA_VISIBLE_DEVICES and CUDA's device order made
    of the index; CUDA gives it bare, NVML wants it with its ``GPU-`` prefix.
    """
    try:
        nvml.nvmlInit()
        handle = nvml.nvmlDeviceGetHandleByUUID(f"GPU-{cuda_uuid}")
        nvml.nvmlDeviceGetTotalEnergyConsumption(handle)  # raises NotSupported where there is no counter
    except nvml.NVMLError:
        return None
    return lambda: nvml.nvmlDeviceGetTotalEnergyConsumption(handle)


def joules_per_sample(rank_energy_j: list[float | None], timed_samples: int) -> float | None:
    """All ranks' energy over the timed window per sample trained in it; None if any rank has none."""
    if not rank_energy_j or any(e is None for e in rank_energy_j) or timed_samples <= 0:
        return None
    return sum(rank_energy_j) / timed_samples
