"""Collective time per optimizer step and the share of it hidden under compute, from a profiled window.

A short torch.profiler window (``profile_steps`` optimizer steps, after the timed steps of the last
epoch, so the profiler's overhead touches no timed step) records every op and, on GPUs, every kernel.
Collectives are the events whose name contains one of ``COLLECTIVE_MARKERS``; the rest is compute.
On GPUs the events are kernels (NCCL kernels on their own stream, compute on the others); on CPUs
they are ops. An op that runs on the same thread as a collective and overlaps it is its caller (a
backward hook, DeepSpeed's reduction) or its own bookkeeping, not compute beside it, so it is left
out of the compute. Both figures use the union of the intervals, so nested events count once:

* ``comm_kernel_ms`` = length of the union of collective intervals / profiled steps;
* ``comm_overlap`` = length of (collective union intersect compute union) / length of the collective union.

A collective's time includes its wait for the last rank to arrive (an NCCL kernel spins until its
peers join; gloo blocks), the pre-sync barrier's wait too where it runs (``measure_wait``,
``slow_ranks``): with a straggler, ``comm_kernel_ms`` of a fast rank holds the straggler's lead. The
figures are rank 0's.
"""

from __future__ import annotations

from collections.abc import Iterable
from dataclasses import dataclass

COLLECTIVE_MARKERS = ("nccl", "gloo", "c10d::allreduce", "all_reduce", "allreduce", "reduce_scatter", "all_gather")

Interval = tuple[float, float]


@dataclass(frozen=True)
class TimedEvent:
    name: str
    start_us: float
    end_us: float
    lane: tuple  # what runs one event at a time: a host thread or a GPU stream


def is_collective(name: str) -> bool:
    lowered = name.lower()
    return any(marker in lowered for marker in COLLECTIVE_MARKERS)


def union(intervals: Iterable[Interval]) -> list[Interval]:
    """Sorted, disjoint intervals covering the same points."""
    merged: list[Interval] = []
    for start, end in sorted(intervals):
        if merged and start <= merged[-1][1]:
            merged[-1] = (merged[-1][0], max(merged[-1][1], end))
        else:
            merged.append((start, end))
    return merged


def length(disjoint: list[Interval]) -> float:
    return sum(end - start for start, end in disjoint)


def intersection_length(a: list[Interval], b: list[Interval]) -> float:
    """Length of the points in both; ``a`` and ``b`` are unions (sorted, disjoint)."""
    total, i, j = 0.0, 0, 0
    while i < len(a) and j < len(b):
        total += max(0.0, min(a[i][1], b[j][1]) - max(a[i][0], b[j][0]))
        if a[i][1] < b[j][1]:
            i += 1
        else:
            j += 1
    return total


def overlaps(event: TimedEvent, others: list[TimedEvent]) -> bool:
    return any(event.start_us < o.end_us and o.start_us < event.end_us for o in others)


def comm_figures(events: list[TimedEvent], steps: int) -> tuple[float | None, float | None]:
    """(comm_kernel_ms, comm_overlap) of a window of ``steps`` optimizer steps; None where it has no collective."""
    collectives = [e for e in events if is_collective(e.name)]
    comm = union((e.start_us, e.end_us) for e in collectives)
    if steps <= 0 or not comm:
        return None, None
    by_lane: dict[tuple, list[TimedEvent]] = {}
    for e in collectives:
        by_lane.setdefault(e.lane, []).append(e)
    compute = union(
        (e.start_us, e.end_us) for e in events if not is_collective(e.name) and not overlaps(e, by_lane.get(e.lane, []))
    )
    comm_us = length(comm)
    return comm_us / 1000.0 / steps, intersection_length(comm, compute) / comm_us


class ProfileWindow:
    """``start()`` / ``stop()`` around the profiled steps; ``figures()`` then gives the two columns."""

    def __init__(self, steps: int, cuda: bool):
        self.steps = steps
        self.cuda = cuda
        self.profiler = None
        self.result: tuple[float | None, float | None] = (None, None)

    def start(self) -> None:
        import torch.profiler

        activities = [torch.profiler.ProfilerActivity.CPU]
        if self.cuda:
            activities.append(torch.profiler.ProfilerActivity.CUDA)
        self.profiler = torch.profiler.profile(activities=activities)
        self.profiler.__enter__()

    def stop(self) -> None:
        self.profiler.__exit__(None, None, None)
        self.result = comm_figures(timed_events(self.profiler.events(), self.cuda), self.steps)
        self.profiler = None

    def columns(self) -> dict:
        return {"comm_kernel_ms": self.result[0], "comm_overlap": self.result[1]}


def timed_events(function_events, cuda: bool) -> list[TimedEvent]:
    """The profiler's events as intervals: GPU kernels on GPUs (by stream), host ops on CPUs (by thread)."""
    from torch.autograd import DeviceType

    wanted = DeviceType.CUDA if cuda else DeviceType.CPU
    return [
        TimedEvent(e.name, e.time_range.start, e.time_range.end, (e.device_index, e.thread))
        for e in function_events
        if e.device_type == wanted and e.time_range.end > e.time_range.start
    ]
