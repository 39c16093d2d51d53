"""A gloo process group over processes spawned on this host, for the multi-rank unit tests."""

import contextlib
from collections.abc import Iterator

import torch.distributed as dist


@contextlib.contextmanager
def gloo_group(rank: int, world: int, store_dir: str) -> Iterator[None]:
    """Join the group through a file store in `store_dir` (a fresh directory per group), then leave it together.

    A file store, not a free port found first: another process can take the port before rank 0 binds it. A
    barrier before the teardown: gloo aborts a rank (SIGABRT) whose peer closes its sockets while a connection or a
    message to it is still in flight, so no rank may leave before every rank is done.
    """
    dist.init_process_group("gloo", init_method=f"file://{store_dir}/store", rank=rank, world_size=world)
    try:
        yield
        dist.barrier()
    finally:
        dist.destroy_process_group()
