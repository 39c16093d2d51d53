"""The coupled probe on the ranks: the trial's bucketed gradient all-reduce timed while the ranks compute.

The link probe (``trainers.link_probe``) times collectives on idle ranks. In a trial the all-reduce runs beside the
backward pass and every rank waits for the others at each step; on CPU ranks (gloo) that coupling adds far more than
the idle collective takes. This probe measures it under the trial's own conditions: the trial's model, micro batch
and optimizer as the compute load (its forward, backward and AdamW step, on the threads the rank is given), and the
engine's gradient buckets (sizes and element size from ``analysis.prediction.step_model.step_traffic``), each
all-reduced asynchronously as soon as the backward pass has produced its bytes, as DDP's and DeepSpeed's reducers
launch them. For each group size (the first ``ranks`` ranks, as the link probe's subgroups) it times:

* ``compute``: ``steps`` steps back to back of the load on every rank of the group, without the all-reduce (the
  slowest rank's mean step): the compute timed as ``coupled`` is and under the same sharing of the host, so that
  the two differ by the all-reduce alone;
* ``idle``: the buckets' all-reduce on the group with nothing else running (the slowest rank's);
* ``coupled``: ``steps`` steps back to back of the load with the buckets' all-reduce, waited on before the
  optimizer step (the slowest rank's mean step).

Each is the median of ``repeats`` timed runs after ``warmup`` untimed ones. Rank 0 returns the points.
"""

from __future__ import annotations

import statistics
import time
from collections.abc import Callable
from dataclasses import dataclass

import torch
import torch.distributed as dist

from trainers.link_probe import group_sizes, report_rows

ELEMENTS = {4: torch.float32, 2: torch.bfloat16}  # the reduce dtype by its element size
NUM_CLASSES = 10  # the synthetic data's: the head's size hardly moves the step


@dataclass(frozen=True)
class CoupledPlan:
    """The load and the gradient buckets of one configuration, and how long to time them."""

    model: str
    image_size: int
    micro_batch: int
    bucket_bytes: tuple[int, ...]  # each bucket's bytes, in the order the backward pass fills them
    element_bytes: int = 4  # the reduce dtype's element size (2: DeepSpeed's bf16/fp16 gradients)
    steps: int = 8  # back-to-back steps in one timed run of the coupled load
    repeats: int = 3
    warmup: int = 2
    counts: tuple[int, ...] = ()  # the group sizes to time; () for 2, 4, ... up to the world


@dataclass(frozen=True)
class CoupledPoint:
    ranks: int
    compute_s: float  # one step of the load on every rank of the group, without the all-reduce, the slowest rank's
    idle_s: float  # the buckets' all-reduce on idle ranks
    coupled_s: float  # one step of the load with the buckets' all-reduce, the slowest rank's
    coupled_min_s: float
    coupled_max_s: float
    repeats: int


def launch_points(bucket_bytes: tuple[int, ...]) -> list[int]:
    """The gradient bytes the backward pass has produced when each bucket is full: the running sums."""
    points, total = [], 0
    for size in bucket_bytes:
        total += size
        points.append(total)
    return points


class Load:
    """The trial's step on one rank: forward, backward, AdamW; ``step`` calls ``on_grad_bytes`` with the running
    gradient bytes as the backward pass produces each parameter's gradient."""

    def __init__(self, plan: CoupledPlan) -> None:
        from trainers.model.models import create_model

        self.model = create_model(plan.model, NUM_CLASSES, plan.image_size)
        self.optimizer = torch.optim.AdamW(self.model.parameters())
        self.inputs = torch.randn(plan.micro_batch, 3, plan.image_size, plan.image_size)
        self.labels = torch.randint(0, NUM_CLASSES, (plan.micro_batch,))
        self.element_bytes = plan.element_bytes
        self.on_grad_bytes: Callable[[int], None] = lambda produced: None
        self.produced = 0
        for p in self.model.parameters():
            if p.requires_grad:
                p.register_post_accumulate_grad_hook(self.grad_ready)

    def grad_ready(self, param: torch.Tensor) -> None:
        self.produced += param.numel() * self.element_bytes
        self.on_grad_bytes(self.produced)

    def step(self, before_optimizer: Callable[[], None] = lambda: None) -> None:
        self.produced = 0
        self.optimizer.zero_grad(set_to_none=True)
        loss = torch.nn.functional.cross_entropy(self.model(self.inputs), self.labels)
        loss.backward()
        before_optimizer()
        self.optimizer.step()


class Buckets:
    """The gradient buckets as preallocated buffers; ``launch_ready`` starts each one's async all-reduce once the
    backward pass has produced its bytes, ``wait`` waits for all (launching any the hooks did not reach)."""

    def __init__(self, plan: CoupledPlan, group) -> None:
        dtype = ELEMENTS[plan.element_bytes]
        self.buffers = [torch.ones(max(1, size // plan.element_bytes), dtype=dtype) for size in plan.bucket_bytes]
        self.ready_at = launch_points(plan.bucket_bytes)
        self.group = group
        self.handles: list = []

    def launch_ready(self, produced: int) -> None:
        while len(self.handles) < len(self.buffers) and produced >= self.ready_at[len(self.handles)]:
            self.handles.append(dist.all_reduce(self.buffers[len(self.handles)], group=self.group, async_op=True))

    def wait(self) -> None:
        self.launch_ready(self.ready_at[-1])
        for handle in self.handles:
            handle.wait()
        self.handles = []


def slowest(seconds: float, group) -> float:
    elapsed = torch.tensor([seconds], dtype=torch.float64)
    dist.all_reduce(elapsed, op=dist.ReduceOp.MAX, group=group)
    return float(elapsed.item())


def timed_runs(run: Callable[[], float], plan: CoupledPlan) -> list[float]:
    for _ in range(plan.warmup):
        run()
    return [run() for _ in range(plan.repeats)]


def time_group(plan: CoupledPlan, load: Load, ranks: int, group) -> CoupledPoint:
    """One group size's point; every rank of the world calls it, the first ``ranks`` take part."""
    inside = dist.get_rank() < ranks
    buckets = Buckets(plan, group) if inside else None

    idle, coupled, compute = [0.0], [0.0], [0.0]
    if inside:

        def steps(before_optimizer: Callable[[], None] = lambda: None) -> float:
            dist.barrier(group=group)
            start = time.perf_counter()
            for _ in range(plan.steps):
                load.step(before_optimizer)
            return slowest((time.perf_counter() - start) / plan.steps, group)

        def reduce_idle() -> float:
            dist.barrier(group=group)
            start = time.perf_counter()
            buckets.wait()
            return slowest(time.perf_counter() - start, group)

        compute = timed_runs(steps, plan)
        idle = timed_runs(reduce_idle, plan)
        load.on_grad_bytes = buckets.launch_ready
        coupled = timed_runs(lambda: steps(buckets.wait), plan)
        load.on_grad_bytes = lambda produced: None
    dist.barrier()
    return CoupledPoint(
        ranks,
        statistics.median(compute),
        statistics.median(idle),
        statistics.median(coupled),
        min(coupled),
        max(coupled),
        plan.repeats,
    )


def probe_coupled(plan: CoupledPlan) -> list[CoupledPoint]:
    """Every rank calls it (subgroups are made on all ranks, in one order); rank 0's list is whole."""
    torch.manual_seed(dist.get_rank())
    world = dist.get_world_size()
    load = Load(plan)
    points = []
    for ranks in [n for n in group_sizes(world) if not plan.counts or n in plan.counts]:
        group = dist.new_group(list(range(ranks))) if ranks < world else None
        points.append(time_group(plan, load, ranks, group))
    return points


def coupled_fn_per_worker(config: dict) -> None:
    """A Ray Train worker's function: the coupled probe, then rank 0's points as rows of ``links`` (row
    ``coupled``: ``time_s`` the coupled step, ``compute_s`` the load without the all-reduce, ``idle_s`` the buckets'
    idle all-reduce)."""
    plan = CoupledPlan(**{**config["plan"], "bucket_bytes": tuple(config["plan"]["bucket_bytes"])})
    points = probe_coupled(plan)
    report_rows(
        points,
        lambda p, where: {
            "row": "coupled",
            "collective": "all_reduce",
            **where(p.ranks),
            "bytes": sum(plan.bucket_bytes),
            "buckets": len(plan.bucket_bytes),
            "load": f"{plan.model} x{plan.micro_batch}",
            "time_s": p.coupled_s,
            "time_min_s": p.coupled_min_s,
            "time_max_s": p.coupled_max_s,
            "compute_s": p.compute_s,
            "idle_s": p.idle_s,
            "repeats": p.repeats,
        },
    )
