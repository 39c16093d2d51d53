"""Process groups made after the world group take the sweep's collective timeout, not torch's 30 minutes."""

from __future__ import annotations

from datetime import timedelta

import pytest
import torch.distributed.distributed_c10d as c10d

from trainers.group_timeout import use_collective_timeout


@pytest.fixture
def torch_defaults():
    before = c10d.default_pg_timeout, c10d.default_pg_nccl_timeout
    yield
    c10d.default_pg_timeout, c10d.default_pg_nccl_timeout = before


@pytest.mark.parametrize("backend", ["gloo", "nccl"])
def test_new_groups_take_the_collective_timeout(torch_defaults, backend):
    assert c10d._get_default_timeout(backend) >= timedelta(minutes=10)  # torch's default, what DeepSpeed's clone got
    use_collective_timeout(15)
    # the function new_group calls for its timeout when none is given
    assert c10d._get_default_timeout(backend) == timedelta(seconds=15)
