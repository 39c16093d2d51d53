"""Capacity: placing a trial's ranks (and its driver's small CPU share) on nodes, reserving and releasing."""

from __future__ import annotations

import copy
import os

import pytest

from raysweep.core.params import TrialParams
from raysweep.runtime.capacity import DRIVER_CPU, Capacity, Demand, local_num_cpus


def nodes(*specs: tuple[float, float]) -> Capacity:
    """Capacity of nodes n0, n1, ... each (CPUs, GPUs)."""
    return Capacity({f"n{i}": {"CPU": float(c), "GPU": float(g)} for i, (c, g) in enumerate(specs)})


def demand(ranks: int, strategy: str = "PACK", cpus: float = 1.0, gpus: float = 0.0) -> Demand:
    return Demand(cpus, gpus, ranks, strategy)


def test_demand_of_params_counts_one_gpu_per_rank_only_on_gpu_trials():
    cpu = Demand.of(TrialParams(num_workers=3, cpus_per_worker=2.0, device="cpu", placement_strategy="SPREAD"))
    gpu = Demand.of(TrialParams(num_workers=4, device="gpu", placement_strategy="STRICT_PACK"))
    assert cpu == Demand(2.0, 0.0, 3, "SPREAD")
    assert gpu == Demand(1.0, 1.0, 4, "STRICT_PACK")
    assert cpu.describe() == "3 x (2 CPU) SPREAD"
    assert gpu.describe() == "4 x (1 CPU + 1 GPU) STRICT_PACK"


def test_capacity_totals_and_description():
    c = nodes((4, 0), (8, 2), (16, 0))
    assert c.total_gpus == 2
    assert c.describe() == "8 CPU + 2 GPU, 16 CPU + 0 GPU, 4 CPU + 0 GPU"  # largest first, GPUs before CPUs
    assert Capacity().describe() == "no nodes"


# ---- place -----------------------------------------------------------------------------


def test_place_returns_rank_nodes_then_the_driver_node_and_changes_nothing():
    c = nodes((4, 0))
    before = copy.deepcopy(c.nodes)
    assert c.place(demand(2)) == ["n0", "n0", "n0"]
    assert c.nodes == before


def test_pack_may_use_several_nodes():
    placed = nodes((2, 0), (2, 0)).place(demand(3))
    assert placed is not None and len(placed) == 4
    assert set(placed[:3]) == {"n0", "n1"}  # three 1-CPU ranks cannot share one 2-CPU node


def test_pack_does_not_fit_when_ranks_exceed_all_nodes():
    assert nodes((2, 0), (2, 0)).place(demand(5)) is None


def test_driver_needs_its_small_cpu_share_beyond_the_ranks():
    assert nodes((4, 0)).place(demand(4)) is None  # ranks fill every CPU: no room for the driver
    assert nodes((4 + DRIVER_CPU, 0)).place(demand(4)) == ["n0"] * 5
    assert nodes((4, 0), (DRIVER_CPU, 0)).place(demand(4, "STRICT_PACK")) == ["n0"] * 4 + ["n1"]


def test_strict_pack_needs_one_node_holding_every_rank():
    assert nodes((2, 0), (2, 0)).place(demand(3, "STRICT_PACK")) is None
    assert nodes((2, 0), (2, 0)).place(demand(3, "PACK")) is not None
    placed = nodes((1, 0), (3, 0)).place(demand(2, "STRICT_PACK"))
    assert placed[:2] == ["n1", "n1"]


def test_strict_spread_puts_each_rank_on_a_distinct_node():
    placed = nodes((4, 0), (4, 0), (4, 0)).place(demand(3, "STRICT_SPREAD"))
    assert placed is not None and sorted(placed[:3]) == ["n0", "n1", "n2"]
    assert nodes((8, 0), (8, 0)).place(demand(3, "STRICT_SPREAD")) is None  # plenty of CPUs, too few nodes


def test_strict_spread_skips_nodes_that_are_too_small():
    placed = nodes((0.5, 0), (2, 0), (2, 0)).place(demand(2, "STRICT_SPREAD"))
    assert placed is not None and sorted(placed[:2]) == ["n1", "n2"]


def test_gpu_ranks_need_a_gpu_each():
    c = nodes((16, 2))
    assert c.place(demand(2, gpus=1)) == ["n0"] * 3
    assert c.place(demand(3, gpus=1)) is None
    assert nodes((16, 0)).place(demand(1, gpus=1)) is None
    placed = nodes((16, 1), (16, 1)).place(demand(2, "STRICT_SPREAD", gpus=1))
    assert sorted(placed[:2]) == ["n0", "n1"]
    assert nodes((16, 1), (16, 1)).place(demand(2, "STRICT_PACK", gpus=1)) is None


def test_fractional_cpus_per_rank():
    assert nodes((2, 0)).place(demand(3, cpus=0.5)) == ["n0"] * 4
    assert nodes((1.5, 0)).place(demand(3, cpus=0.5)) is None


# ---- reserve / release ----------------------------------------------------------------


def test_reserve_takes_rank_resources_and_the_driver_share():
    c = nodes((8, 2))
    placed = c.reserve(demand(2, gpus=1, cpus=2))
    assert placed == ["n0"] * 3
    assert c.nodes["n0"]["CPU"] == pytest.approx(8 - 2 * 2 - DRIVER_CPU)
    assert c.nodes["n0"]["GPU"] == 0
    assert c.reserve(demand(1, gpus=1)) is None  # GPUs are gone
    assert c.nodes["n0"]["GPU"] == 0  # a failed reserve takes nothing


def test_a_failed_reserve_leaves_capacity_unchanged():
    c = nodes((2, 0), (2, 0))
    before = copy.deepcopy(c.nodes)
    assert c.reserve(demand(3, "STRICT_SPREAD")) is None
    assert c.nodes == before


@pytest.mark.parametrize(
    ("spec", "d"),
    [
        (((4, 0),), demand(2)),
        (((3, 0), (3, 0)), demand(4, "PACK")),
        (((8, 1), (8, 1), (8, 1)), demand(3, "STRICT_SPREAD", gpus=1, cpus=1.5)),
        (((1, 0), (8, 4)), demand(4, "STRICT_PACK", gpus=1, cpus=0.7)),
    ],
)
def test_release_restores_exactly_what_reserve_took(spec, d):
    c = nodes(*spec)
    before = copy.deepcopy(c.nodes)
    for _ in range(5):
        placed = c.reserve(d)
        assert placed is not None
        assert c.nodes != before
        c.release(d, placed)
        assert c.nodes == before


def test_reserve_until_full_then_release_lets_the_next_trial_in():
    c = nodes((4, 0))
    first = c.reserve(demand(2))
    assert first is not None
    assert c.reserve(demand(2)) is None  # 2 CPUs minus the first driver's share are left
    assert c.reserve(demand(1)) is not None
    c.release(demand(2), first)
    assert c.reserve(demand(2)) is not None


# ---- local_num_cpus ----------------------------------------------------------------------


def test_local_num_cpus_is_at_least_the_machines_cpus():
    cores = os.cpu_count() or 1
    assert local_num_cpus([]) >= cores
    assert local_num_cpus([TrialParams(num_workers=1)]) == max(cores, 2)


def test_local_num_cpus_grows_beyond_the_cores_for_a_big_trial():
    cores = os.cpu_count() or 1
    big = TrialParams(num_workers=cores + 3)
    assert local_num_cpus([TrialParams(), big]) == cores + 4  # every rank plus the driver
    trials = [TrialParams(num_workers=cores + 3, cpus_per_worker=1.5)]
    needed = (cores + 3) * 1.5
    assert local_num_cpus(trials) >= needed + DRIVER_CPU
    # and the planned local cluster then really holds that trial
    cap = Capacity({"local": {"CPU": float(local_num_cpus(trials)), "GPU": 0.0}})
    assert cap.place(Demand.of(trials[0])) is not None


def test_the_first_trial_is_the_first_that_fits_resolved_for_the_cluster():
    from raysweep.planning.plan import first_trial
    from raysweep.planning.space import space_from_mapping

    space = space_from_mapping("s", {"axes": {"num_workers": [8, 2, 1]}, "drop_unfit": True}, "test")
    gpus = Capacity({"a": {"CPU": 16.0, "GPU": 4.0}})
    first = first_trial(space, gpus)
    assert (first.num_workers, first.device, first.precision) == (2, "gpu", "bf16")  # 8 ranks do not fit
    assert first_trial(space, Capacity({"a": {"CPU": 4.0, "GPU": 0.0}})).device == "cpu"
    assert first_trial(space, Capacity({"a": {"CPU": 0.5, "GPU": 0.0}})) is None
