"""The emulated slow rank with a fake clock: delay sizing under accumulation and the achieved slowdown."""

import pytest
import torch

from raysweep.core.params import TrialParams
from trainers.measure.straggler import Straggler
from trainers.measure.timing import IntervalClock

CPU = torch.device("cpu")
MICRO_MS = 10.0


class FakeClock:
    def __init__(self):
        self.now = 0.0

    def __call__(self) -> float:
        return self.now

    def advance(self, seconds: float) -> None:
        self.now += seconds


def run_steps(straggler: Straggler, clock: FakeClock, steps: int, accum: int) -> list[float]:
    """Optimizer steps of ``accum`` micro batches of MICRO_MS compute each, timed as the loop times them."""
    step_clock = IntervalClock(CPU, clock)
    for _ in range(steps):
        step_clock.start()
        for i in range(accum):
            clock.advance(MICRO_MS / 1000.0)  # forward and backward
            straggler.before_backward(last_micro_batch=i == accum - 1)
        step_clock.stop()
    return step_clock.drain_ms()


def slowed_trial(slow_factor: float, accum: int) -> tuple[Straggler, FakeClock]:
    clock = FakeClock()
    return Straggler(slow_factor, barrier=False, accum=accum, device=CPU, delay=clock.advance, clock=clock), clock


def test_slowdown_stays_f_under_accumulation():
    straggler, clock = slowed_trial(0.3, accum=4)
    straggler.calibrate(run_steps(straggler, clock, steps=2, accum=4))  # warm-up: 40 ms per step
    assert straggler.calibrated_busy_ms == pytest.approx(40.0)
    timed = run_steps(straggler, clock, steps=3, accum=4)
    # 4 micro batches x (10 ms + 0.3 x 10 ms): 1.3 x the step, not 1 + 0.3/4 = 1.075 x
    assert timed == pytest.approx([52.0] * 3)
    assert straggler.slowdown_achieved(timed, None) == pytest.approx(1.3)


def test_calibration_takes_the_fastest_warm_up_step():
    straggler, clock = slowed_trial(0.5, accum=1)
    straggler.calibrate([90.0, 10.0])  # the first step compiles and allocates
    assert straggler.delay_s == pytest.approx(0.005)


def test_the_achieved_slowdown_is_the_timed_steps_own_after_a_slow_warm_up():
    """A warm-up slowed by anything else (here 9x the compute) sizes the delay 9x too long: the achieved slowdown
    reads what the timed steps held (10 ms of compute and 27 ms of delay: 3.7x), not their time over that warm-up's
    (37 / 90 ms, below 1)."""
    straggler, clock = slowed_trial(0.3, accum=1)
    straggler.calibrate([90.0])
    timed = run_steps(straggler, clock, steps=3, accum=1)
    assert timed == pytest.approx([37.0] * 3)
    assert straggler.slowdown_achieved(timed, None) == pytest.approx(3.7)


def test_busy_time_is_step_less_wait():
    straggler, _ = slowed_trial(0.3, accum=1)
    straggler.calibrate([20.0])
    assert straggler.slowdown_achieved([36.0, 30.0], [10.0, 4.0]) == pytest.approx(26.0 / 20.0)


def test_unslowed_rank_reads_one_and_uncalibrated_slow_rank_none():
    fast, _ = slowed_trial(0.0, accum=2)
    assert fast.slowdown_achieved([10.0], None) == 1.0
    slow, _ = slowed_trial(0.3, accum=2)
    assert slow.slowdown_achieved([10.0], None) is None  # no warm-up step to calibrate on


@pytest.mark.parametrize(
    ("slow_ranks", "measure_wait", "world", "barrier"),
    [("", False, 2, False), ("", True, 2, True), ("1", False, 2, True), ("0", False, 1, False)],
)
def test_barrier_only_where_asked(slow_ranks, measure_wait, world, barrier):
    params = TrialParams(num_workers=world, slow_ranks=slow_ranks, measure_wait=measure_wait)
    assert Straggler.of(params, 0, world, CPU).barrier is barrier
    assert Straggler.of(params, 0, world, CPU).drain_wait_ms() == ([] if barrier else None)
