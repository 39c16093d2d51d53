"""Interval arithmetic of the profiled communication figures, on synthetic events."""

import pytest

from trainers.measure.comm_profile import TimedEvent, comm_figures, intersection_length, is_collective, union

MAIN, COMM_STREAM = ("cpu", 1), ("cuda", 7)


def test_union_merges_nested_and_touching_intervals():
    assert union([(5, 6), (0, 2), (1, 3), (3, 4)]) == [(0, 4), (5, 6)]


def test_intersection_of_two_unions():
    assert intersection_length([(0, 4), (6, 10)], [(2, 7), (9, 12)]) == 2 + 1 + 1


def test_collective_names():
    assert all(map(is_collective, ["ncclDevKernel_AllReduce_Sum_f32", "gloo:all_reduce", "c10d::allreduce_"]))
    assert is_collective("record_param_comms reduce_scatter_tensor") and is_collective("all_gather_into_tensor")
    assert not is_collective("aten::addmm")


def test_kernel_time_per_step_and_overlap_share():
    events = [
        TimedEvent("ncclKernel_AllReduce", 10, 30, COMM_STREAM),  # 20 us, 10 of them under compute
        TimedEvent("ncclKernel_AllReduce", 25, 40, COMM_STREAM),  # nested in the union: counts once
        TimedEvent("sm90_gemm", 0, 20, ("cuda", 0)),
        TimedEvent("sm90_gemm", 50, 60, ("cuda", 0)),
    ]
    kernel_ms, overlap = comm_figures(events, steps=2)
    assert kernel_ms == pytest.approx(30 / 1000 / 2)
    assert overlap == pytest.approx(10 / 30)


def test_a_caller_on_the_collectives_thread_is_not_compute():
    events = [
        TimedEvent("autograd::engine::evaluate_function", 0, 100, MAIN),  # encloses the blocking all-reduce
        TimedEvent("gloo:all_reduce", 40, 80, MAIN),
        TimedEvent("aten::mm", 60, 70, ("cpu", 2)),  # another thread computes meanwhile
    ]
    assert comm_figures(events, steps=1) == (pytest.approx(0.04), pytest.approx(10 / 40))


def test_no_collectives_or_no_steps_give_none():
    assert comm_figures([TimedEvent("aten::mm", 0, 1, MAIN)], steps=3) == (None, None)
    assert comm_figures([TimedEvent("gloo:all_reduce", 0, 1, MAIN)], steps=0) == (None, None)
