"""Emulated slow ranks, and each rank's wait for the others before the gradient synchronisation.

A slow rank sleeps before every micro batch's backward pass, for ``slow_factor`` of its own compute
time per micro batch, measured during the warm-up steps of this worker-group start (the calibration).
Every micro batch is delayed, so k accumulation steps keep the slowdown at f (delaying only the
last micro batch would give f/k). On a GPU the delay is on the device (``torch.cuda._sleep`` of a
number of cycles calibrated once), so it holds the stream as a slower kernel would; on a CPU it is
``time.sleep``. A sleep adds no collectives and no parameter gathers, so slow ranks work with every
engine, ZeRO-3 and FSDP included. The slowdown a rank achieved (``slowdown_achieved``) is its timed steps'
busy time over the same time less the delay they held.

The pre-sync barrier (a one-element all-reduce before the last micro batch's backward, where the
gradient sync happens) runs only when asked: ``measure_wait`` or ``slow_ranks`` set, on more than one
rank. Its wait is ``wait_ms``; step time minus the wait is ``busy_ms``. Without the barrier neither is
measured: a rank's wait then hides inside the gradient sync.
"""

from __future__ import annotations

import statistics
import time
from collections.abc import Callable

import torch
import torch.distributed as dist

from raysweep.core.params import TrialParams
from trainers.measure.timing import IntervalClock

Delay = Callable[[float], None]  # holds the rank for so many seconds


def device_delay(device: torch.device) -> Delay:
    """A delay on the device's stream (GPUs) or of the host (CPUs)."""
    if device.type != "cuda":
        return time.sleep
    cycles_per_s = gpu_sleep_cycles_per_second(device)
    return lambda seconds: torch.cuda._sleep(int(seconds * cycles_per_s))


def gpu_sleep_cycles_per_second(device: torch.device, cycles: int = 10_000_000) -> float:
    """How many ``torch.cuda._sleep`` cycles make a second on this GPU (measured once)."""
    torch.cuda._sleep(cycles)  # the first launch pays for loading the kernel
    start, end = torch.cuda.Event(enable_timing=True), torch.cuda.Event(enable_timing=True)
    start.record()
    torch.cuda._sleep(cycles)
    end.record()
    torch.cuda.synchronize(device)
    return cycles / (start.elapsed_time(end) / 1000.0)


class Straggler:
    """Per rank: the calibrated delay of a slow rank and the barrier wait of every rank."""

    def __init__(
        self,
        slow_factor: float,
        barrier: bool,
        accum: int,
        device: torch.device,
        delay: Delay,
        clock: Callable[[], float] = time.perf_counter,
    ):
        self.slow_factor = slow_factor
        self.barrier = barrier
        self.accum = accum
        self.delay = delay
        self.wait_clock = IntervalClock(device, clock)
        self.token = torch.zeros(1, device=device)
        self.warmup_busy_ms: list[float] = []
        self.delay_s = 0.0  # per micro batch, once calibrated

    @classmethod
    def of(cls, params: TrialParams, rank: int, world: int, device: torch.device) -> Straggler:
        slowed = rank in params.slow_rank_list and params.slow_factor > 0
        barrier = world > 1 and (params.measure_wait or bool(params.slow_rank_list))
        delay = device_delay(device) if slowed else time.sleep
        return cls(params.slow_factor if slowed else 0.0, barrier, params.grad_accum_steps, device, delay)

    @property
    def calibrated_busy_ms(self) -> float | None:
        """The rank's busy time per optimizer step without the delay: the fastest warm-up step."""
        return min(self.warmup_busy_ms) if self.warmup_busy_ms else None

    def calibrate(self, warmup_step_ms: list[float]) -> None:
        """Take the warm-up steps' times (and their waits); size the delay from the fastest one."""
        self.warmup_busy_ms += busy(warmup_step_ms, self.wait_clock.drain_ms())
        if self.slow_factor and self.calibrated_busy_ms is not None:
            self.delay_s = self.slow_factor * self.calibrated_busy_ms / self.accum / 1000.0

    def before_backward(self, last_micro_batch: bool) -> None:
        if self.delay_s:
            self.delay(self.delay_s)
        if last_micro_batch and self.barrier:
            self.wait_clock.start()
            dist.all_reduce(self.token)
            self.wait_clock.stop()

    def drain_wait_ms(self) -> list[float] | None:
        """The timed steps' waits; None without the barrier."""
        waits = self.wait_clock.drain_ms()
        return waits if self.barrier else None

    def slowdown_achieved(self, step_ms: list[float], wait_ms: list[float] | None) -> float | None:
        """Mean busy step time with the delay over the same steps' without it (less the delay they held):
        1.0 unslowed, None if unmeasured.

        Taken on the timed steps themselves, not against the warm-up that sized the delay: where the warm-up
        ran slow (a busy host, a first step's allocations), the delay overshoots ``slow_factor`` and this says
        by how much, rather than dividing by that slow warm-up (which read below 1 on a busy host).
        """
        if not self.slow_factor:
            return 1.0
        if not step_ms or not self.delay_s:
            return None
        busy_ms = statistics.fmean(busy(step_ms, wait_ms))
        undelayed_ms = busy_ms - self.delay_s * self.accum * 1000.0
        return busy_ms / undelayed_ms if undelayed_ms > 0 else None


def busy(step_ms: list[float], wait_ms: list[float] | None) -> list[float]:
    """Step times less their barrier waits (the steps themselves without a barrier)."""
    if not wait_ms:
        return list(step_ms)
    return [s - w for s, w in zip(step_ms, wait_ms, strict=True)]
