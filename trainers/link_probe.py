"""The link probe on the ranks: times all-reduce, reduce-scatter, all-gather and all-to-all over torch.distributed.

Every rank of a worker group runs ``probe_links``. For each group size of 2, 4, ... up to the world (the
first ranks, a subgroup of each size) and each buffer size from ``min_bytes`` up by factors of 4 to
``max_bytes`` (capped so that a collective's buffers fit a quarter of the memory free on the tightest rank),
each collective runs ``warmup`` times untimed, then ``repeats`` times timed: all ranks leave a barrier, time
one collective (the device synchronised before the clock is read), and the slowest rank's time is the
repeat's. A point is the median of the repeats, with their spread. Rank 0 returns the points.
"""

from __future__ import annotations

import os
import statistics
import time
from dataclasses import dataclass

import torch
import torch.distributed as dist

COLLECTIVES = ("all_reduce", "reduce_scatter", "all_gather", "all_to_all")
ELEMENT = torch.float32
ELEMENT_BYTES = 4


@dataclass(frozen=True)
class ProbePlan:
    min_bytes: int = 1 << 10
    max_bytes: int = 1 << 30
    repeats: int = 5
    warmup: int = 2
    collectives: tuple[str, ...] = COLLECTIVES


@dataclass(frozen=True)
class ProbePoint:
    collective: str
    ranks: int
    nbytes: int
    time_s: float
    time_min_s: float
    time_max_s: float
    repeats: int


def buffer_sizes(plan: ProbePlan, world: int, free_bytes: int) -> list[int]:
    """Sizes from ``min_bytes`` by factors of 4 to ``max_bytes``, within a quarter of ``free_bytes`` for two buffers,
    each a whole number of elements on every rank."""
    cap = min(plan.max_bytes, free_bytes // 8)
    quantum = ELEMENT_BYTES * world
    sizes, size = [], plan.min_bytes
    while size <= cap:
        sizes.append(max(quantum, size // quantum * quantum))
        size *= 4
    return sizes


def free_memory_bytes(device: torch.device) -> int:
    """Memory a rank's buffers may take: free device memory on a GPU, available RAM split between a node's ranks."""
    if device.type == "cuda":
        return torch.cuda.mem_get_info(device)[0]
    available = os.sysconf("SC_AVPHYS_PAGES") * os.sysconf("SC_PAGE_SIZE")
    local = int(os.environ.get("LOCAL_WORLD_SIZE", "1"))
    return available // max(1, local)


def synchronize(device: torch.device) -> None:
    if device.type == "cuda":
        torch.cuda.synchronize(device)


def time_point(collective: str, nbytes: int, ranks: int, group, device: torch.device, plan: ProbePlan) -> ProbePoint:
    """One point: the warm-up untimed, then the slowest rank's time of each repeat (buffers made outside the clock)."""
    numel = nbytes // ELEMENT_BYTES
    source = torch.ones(numel, dtype=ELEMENT, device=device)
    target = torch.empty(numel, dtype=ELEMENT, device=device)
    shard = numel // ranks

    def once() -> None:
        if collective == "all_reduce":
            dist.all_reduce(source, group=group)
        elif collective == "reduce_scatter":
            dist.reduce_scatter_tensor(target[:shard], source, group=group)
        elif collective == "all_gather":
            dist.all_gather_into_tensor(target, source[:shard], group=group)
        else:
            dist.all_to_all_single(target, source, group=group)

    for _ in range(plan.warmup):
        once()
    times = []
    for _ in range(plan.repeats):
        synchronize(device)
        dist.barrier(group=group)
        start = time.perf_counter()
        once()
        synchronize(device)
        elapsed = torch.tensor([time.perf_counter() - start], dtype=torch.float64, device=device)
        dist.all_reduce(elapsed, op=dist.ReduceOp.MAX, group=group)
        times.append(float(elapsed.item()))
    return ProbePoint(collective, ranks, nbytes, statistics.median(times), min(times), max(times), len(times))


def group_sizes(world: int) -> list[int]:
    """2, 4, 8, ... below the world, and the world itself."""
    sizes, size = [], 2
    while size < world:
        sizes.append(size)
        size *= 2
    return sizes + [world] if world >= 2 else []


def probe_links(plan: ProbePlan, device: torch.device) -> list[ProbePoint]:
    """Every rank calls it (collectives and subgroups are made on all ranks, in one order); rank 0's list is whole."""
    world, rank = dist.get_world_size(), dist.get_rank()
    free = torch.tensor([free_memory_bytes(device)], dtype=torch.float64, device=device)
    dist.all_reduce(free, op=dist.ReduceOp.MIN)
    points = []
    for ranks in group_sizes(world):
        group = dist.new_group(list(range(ranks))) if ranks < world else None
        for collective in plan.collectives:
            for nbytes in buffer_sizes(plan, ranks, int(free.item())):
                if rank < ranks:
                    points.append(time_point(collective, nbytes, ranks, group, device, plan))
        dist.barrier()
    return points


def link_class(node_ids: list[str]) -> str:
    """intra_node: every rank on one node; inter_node: one rank per node; mixed otherwise (not fitted)."""
    distinct = len(set(node_ids))
    if distinct == 1:
        return "intra_node"
    return "inter_node" if distinct == len(node_ids) else "mixed"


def placement(nodes: list[str], ranks: int) -> dict:
    """A ``links`` row's columns for a group of the first ``ranks`` ranks, given every rank's node id."""
    return {
        "link_class": link_class(nodes[:ranks]),
        "backend": dist.get_backend(),
        "ranks": ranks,
        "nodes": len(set(nodes[:ranks])),
    }


def probe_fn_per_worker(config: dict) -> None:
    """A Ray Train worker's function: probe, then report rank 0's points as rows of ``links`` (each rank reports)."""
    import ray
    import ray.train
    import ray.train.torch

    device = ray.train.torch.get_device()
    points = probe_links(ProbePlan(**config["plan"]), device)
    report_rows(
        points,
        lambda p, where: {
            "row": "point",
            "collective": p.collective,
            **where(p.ranks),
            "bytes": p.nbytes,
            "time_s": p.time_s,
            "time_min_s": p.time_min_s,
            "time_max_s": p.time_max_s,
            "repeats": p.repeats,
        },
    )


def report_rows(points: list, row) -> None:
    """Rank 0's points as ``links`` rows, reported to Ray Train: ``row(point, where)``, where ``where(ranks)`` is the
    placement columns of a point on that many ranks (every rank joins the gathering of node ids)."""
    import ray
    import ray.train

    nodes = [None] * dist.get_world_size()
    dist.all_gather_object(nodes, ray.get_runtime_context().get_node_id())
    rows = [row(p, lambda ranks: placement(nodes, ranks)) for p in (points if dist.get_rank() == 0 else [])]
    ray.train.report({"link_points": rows})
