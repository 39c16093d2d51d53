"""The CPU memory budget: a rank whose resident peak is above memory_budget_gib fails as out of memory."""

from __future__ import annotations

import pytest
import torch

from raysweep.core.errors import is_out_of_memory
from raysweep.core.params import TrialParams
from trainers.measure.hardware import peak_memory_gib
from trainers.measure.memory_budget import MemoryBudget

CPU = torch.device("cpu")


def test_peak_above_budget_raises_out_of_memory_naming_peak_and_budget():
    peak = peak_memory_gib(CPU)  # this test process: at least the interpreter and torch
    budget = MemoryBudget(TrialParams(memory_budget_gib=peak / 2), CPU)
    with pytest.raises(torch.OutOfMemoryError) as raised:
        budget.check()
    text = str(raised.value)
    assert f"memory_budget_gib={peak / 2:g}" in text
    assert float(text.split("peak ")[1].split(" GiB")[0]) >= peak - 1e-3
    assert is_out_of_memory(f"{type(raised.value).__name__}: {text}")  # the recorder's oom rule


def test_peak_below_budget_passes():
    MemoryBudget(TrialParams(memory_budget_gib=peak_memory_gib(CPU) + 64), CPU).check()


def test_no_budget_never_raises():
    MemoryBudget(TrialParams(memory_budget_gib=0.0), CPU).check()


def test_gpu_ranks_ignore_the_budget():
    """A GPU's limit is its own memory; the resident set of the host process says nothing about it."""
    budget = MemoryBudget(TrialParams(memory_budget_gib=1e-6), torch.device("cuda", 0))
    assert budget.budget_gib == 0.0
    budget.check()
