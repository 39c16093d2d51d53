"""A memory budget for CPU ranks, so the search for the largest batch that fits runs without a GPU.

A GPU rank runs out of memory when its allocator does; a CPU rank would only swap or be killed.
With ``memory_budget_gib > 0`` a CPU rank checks its peak resident set size after each optimizer
step and raises ``torch.OutOfMemoryError`` (which the trial records as ``oom``, with the peak) once
the peak is above the budget. The peak is the whole process's: the Python interpreter, torch and
the model's code take about 0.5-1 GiB before the first batch, so a budget must include them. Data
loader processes are not counted (their memory is their own).
"""

from __future__ import annotations

import torch

from raysweep.core.params import TrialParams
from trainers.measure.hardware import peak_memory_gib


class MemoryBudget:
    """``check()`` after each optimizer step; a no-op on GPUs and with no budget."""

    def __init__(self, params: TrialParams, device: torch.device):
        self.device = device
        # GPUs have their own limit: the device's memory.
        self.budget_gib = params.memory_budget_gib if device.type == "cpu" else 0.0

    def check(self) -> None:
        if not self.budget_gib:
            return
        # ru_maxrss is one system call and needs no device synchronisation.
        peak = peak_memory_gib(self.device)
        if peak > self.budget_gib:
            raise torch.OutOfMemoryError(
                f"resident memory peak {peak:.3f} GiB is above memory_budget_gib={self.budget_gib:g} "
                "(the budget counts the whole rank process)"
            )
