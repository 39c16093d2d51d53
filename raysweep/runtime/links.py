"""The link probe on a Ray cluster: a Ray Train worker group per link class runs ``trainers.link_probe``.

Intra-node: the most ranks one node holds, all on it (``STRICT_PACK``). Inter-node, where the cluster has
two or more nodes: one rank on each (``STRICT_SPREAD``). Each group is a ``TorchTrainer`` of the sweep's own
making (``raysweep.runtime.train_run.torch_trainer``), so the probe runs over the backend, the placement and
the runtime environment the trials get.
"""

from __future__ import annotations

from dataclasses import asdict, dataclass

import ray
from ray.train.v2.api.callback import UserCallback

from raysweep.core.params import TrialParams
from raysweep.runtime.capacity import Capacity
from raysweep.runtime.train_run import torch_trainer
from trainers.coupled_probe import CoupledPlan
from trainers.link_probe import ProbePlan


@dataclass(frozen=True)
class ProbeGroup:
    """One worker group of the probe: which link it measures and its shape."""

    link_class: str
    ranks: int
    placement_strategy: str

    def params(self, device: str, cpus_per_worker: float) -> TrialParams:
        return TrialParams(
            num_workers=self.ranks,
            device=device,
            cpus_per_worker=cpus_per_worker,
            placement_strategy=self.placement_strategy,
        )


def probe_groups(capacity: Capacity, device: str, cpus_per_worker: float, max_ranks: int) -> list[ProbeGroup]:
    """The groups a cluster allows: intra-node on its largest node, inter-node over its nodes (2 or more ranks each)."""
    per_node = [
        int(min(r["GPU"], r["CPU"] // cpus_per_worker) if device == "gpu" else r["CPU"] // cpus_per_worker)
        for r in capacity.nodes.values()
    ]
    groups = []
    intra = min(max(per_node, default=0), max_ranks)
    if intra >= 2:
        groups.append(ProbeGroup("intra_node", intra, "STRICT_PACK"))
    inter = min(sum(1 for n in per_node if n >= 1), max_ranks)
    if inter >= 2:
        groups.append(ProbeGroup("inter_node", inter, "STRICT_SPREAD"))
    return groups


def run_probe_group(
    group: ProbeGroup,
    plan: ProbePlan | CoupledPlan,
    device: str,
    cpus_per_worker: float,
    storage_path: str,
    timeout_s: int,
    name: str,
) -> list[dict]:
    """The group's timed points, as ``links`` rows (without ``sweep``): the link probe's for a ``ProbePlan``, the
    coupled probe's (``trainers.coupled_probe``) for a ``CoupledPlan``."""
    from trainers.coupled_probe import coupled_fn_per_worker
    from trainers.link_probe import probe_fn_per_worker

    coupled = isinstance(plan, CoupledPlan)
    points = PointsCollector.remote()
    trainer = torch_trainer(
        group.params(device, cpus_per_worker),
        coupled_fn_per_worker if coupled else probe_fn_per_worker,
        {"plan": asdict(plan)},
        f"{name}-{group.link_class}{'-coupled' if coupled else ''}",
        storage_path,
        timeout_s,
        callbacks=[CollectPoints(points)],
    )
    trainer.fit()
    return ray.get(points.rows.remote())


@ray.remote(num_cpus=0)
class PointsCollector:
    """Rank 0's timed points, as the Train controller hands them over."""

    def __init__(self) -> None:
        self.points: list[dict] = []

    def add(self, points: list[dict]) -> None:
        self.points += points

    def rows(self) -> list[dict]:
        return self.points


class CollectPoints(UserCallback):
    """On the Train controller: rank 0's report goes to the collector. Ray Train V2's ``Result.metrics``
    keeps only what was reported with a checkpoint, and the probe reports none."""

    def __init__(self, collector) -> None:
        self.collector = collector

    def after_report(self, run_context, metrics: list[dict], checkpoint) -> None:
        ray.get(self.collector.add.remote(metrics[0]["link_points"]))
