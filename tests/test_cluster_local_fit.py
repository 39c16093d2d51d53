"""A local instance's bound: at most RANKS_PER_CORE ranks per physical core, reserving at most as many CPUs each."""

from __future__ import annotations

import pytest

from raysweep.core.errors import UsageError
from raysweep.core.params import TrialParams
from raysweep.runtime.capacity import RANKS_PER_CORE, MachineSize, check_local_fit

TWO_CORES = MachineSize(cores=2, logical_cpus=2)
SMT = MachineSize(cores=4, logical_cpus=8)


def test_the_bound_is_four_ranks_per_core_and_four_cpus_per_logical_cpu():
    assert RANKS_PER_CORE == 4
    assert (TWO_CORES.max_ranks, TWO_CORES.max_rank_cpus) == (8, 8)
    assert (SMT.max_ranks, SMT.max_rank_cpus) == (16, 32)
    assert TWO_CORES.ranks_that_fit(1.0) == 8
    assert TWO_CORES.ranks_that_fit(3.0) == 2  # 8 CPUs / 3 per rank
    assert SMT.ranks_that_fit(1.0) == 16  # the cores bound the ranks
    assert SMT.ranks_that_fit(0.5) == 16
    assert TWO_CORES.ranks_that_fit(9.0) == 0


def test_trials_up_to_the_bound_pass():
    check_local_fit([TrialParams(num_workers=1), TrialParams(num_workers=8)], TWO_CORES)
    check_local_fit([TrialParams(num_workers=2, cpus_per_worker=4.0)], TWO_CORES)


def test_4096_ranks_on_two_cores_are_refused_naming_the_machine_and_what_fits():
    with pytest.raises(UsageError) as e:
        check_local_fit([TrialParams(num_workers=1), TrialParams(num_workers=4096)], TWO_CORES)
    message = str(e.value)
    assert "num_workers=4096 x cpus_per_worker=1" in message
    assert "2 cores (2 logical CPUs)" in message
    assert "at most 8 ranks (4 per core)" in message
    assert "--set num_workers=8 or fewer" in message and "--address" in message


def test_one_rank_too_many_is_refused():
    with pytest.raises(UsageError, match="num_workers=9 "):
        check_local_fit([TrialParams(num_workers=9)], TWO_CORES)


def test_the_cpus_the_ranks_reserve_are_bounded_too():
    with pytest.raises(UsageError, match="--set num_workers=2 or fewer"):
        check_local_fit([TrialParams(num_workers=3, cpus_per_worker=3.0)], TWO_CORES)
    with pytest.raises(UsageError, match="--set cpus_per_worker=8 or less"):
        check_local_fit([TrialParams(num_workers=1, cpus_per_worker=9.0)], TWO_CORES)


def test_this_machine_has_at_least_one_core():
    machine = MachineSize.of_this_machine()
    assert 1 <= machine.cores <= machine.logical_cpus
