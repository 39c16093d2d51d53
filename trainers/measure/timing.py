"""Honest timing on any device, without a host sync in every step.

On GPUs, intervals are CUDA events read once per epoch, and wall-clock spans start and end
with a device synchronisation; on CPUs the clock is ``perf_counter`` (work is synchronous).
"""

from __future__ import annotations

import statistics
import time
from collections.abc import Callable

import torch
import torch.distributed as dist


def synchronize(device: torch.device) -> None:
    if device.type == "cuda":
        torch.cuda.synchronize(device)


class IntervalClock:
    """Records start/stop pairs; ``drain_ms`` returns the durations so far and forgets them.

    ``clock`` (seconds) is the host clock of CPU devices, replaceable by a fake one in tests.
    """

    def __init__(self, device: torch.device, clock: Callable[[], float] = time.perf_counter):
        self.cuda = device.type == "cuda"
        self.device = device
        self.clock = clock
        self.marks: list = []
        self.open = None

    def _now(self):
        if self.cuda:
            event = torch.cuda.Event(enable_timing=True)
            event.record()
            return event
        return self.clock()

    def start(self) -> None:
        self.open = self._now()

    def stop(self) -> None:
        self.marks.append((self.open, self._now()))

    def drain_ms(self) -> list[float]:
        if self.cuda:
            synchronize(self.device)
            out = [a.elapsed_time(b) for a, b in self.marks]
        else:
            out = [(b - a) * 1000.0 for a, b in self.marks]
        self.marks = []
        return out


class WallSpan:
    """A synchronised wall-clock span: the device has finished what was queued at both ends."""

    def __init__(self, device: torch.device):
        self.device = device
        synchronize(device)
        self.t0 = time.perf_counter()

    def seconds(self) -> float:
        synchronize(self.device)
        return time.perf_counter() - self.t0


def percentile(values: list[float], q: float) -> float:
    if not values:
        return float("nan")
    if len(values) == 1:
        return values[0]
    return statistics.quantiles(values, n=100, method="inclusive")[int(q) - 1]


def time_allreduce_ms(reduction: dict[torch.dtype, int], device: torch.device, repeats: int = 5) -> float:
    """Median time of one all-reduce of the gradients on this group (0 for a single rank).

    ``reduction``: gradient elements per dtype the engine reduces them in (``numerics.gradient_reduction``),
    one buffer per dtype, all-reduced in turn. The cost of synchronising the model's gradients once,
    measured with the real collective on the real process group, outside the training steps so it
    perturbs none of them.
    """
    if not dist.is_initialized() or dist.get_world_size() == 1:
        return 0.0
    buffers = [torch.zeros(numel, dtype=dtype, device=device) for dtype, numel in reduction.items() if numel]
    for buffer in buffers:
        dist.all_reduce(buffer)
    times = []
    for _ in range(repeats):
        span = WallSpan(device)
        for buffer in buffers:
            dist.all_reduce(buffer)
        times.append(span.seconds() * 1000.0)
    return statistics.median(times)
