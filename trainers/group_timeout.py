"""One collective timeout for every process group of a trial, not only the world group.

Ray Train gives the world group the sweep's ``--collective-timeout``, but a group made later with
``torch.distributed.new_group`` (DeepSpeed's clone of the world group, which carries its gradient
all-reduce, and the sequence-parallel groups) takes torch's module default of 30 minutes: a silent
rank would hold its peers that long. Torch reads that default when each group is made, so setting
it before the groups exist gives them all the sweep's timeout.
"""

from __future__ import annotations

from datetime import timedelta

import torch.distributed.distributed_c10d as c10d


def use_collective_timeout(seconds: float) -> None:
    """Make ``seconds`` the timeout of every process group this process creates from now on."""
    timeout = timedelta(seconds=seconds)
    c10d.default_pg_timeout = timeout
    c10d.default_pg_nccl_timeout = timeout
