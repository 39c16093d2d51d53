"""What fits on a Ray cluster: plain arithmetic over its nodes' free CPUs and GPUs.

``Capacity`` models each node's CPUs and GPUs; a trial needs one bundle per rank, placed by its
strategy (STRICT_PACK: one node; STRICT_SPREAD: one rank per node).  The sweep uses it twice: before
starting, to reject trials the cluster can never hold, and while running, to start a pending trial
whenever its ranks fit in what is free.  ``MachineSize`` bounds what a local instance accepts
(``check_local_fit``) before it starts.
"""

from __future__ import annotations

import os
from dataclasses import dataclass, field

from raysweep.core.errors import UsageError
from raysweep.core.params import TrialParams

# The Tune function trainable that drives a trial holds this much CPU; its workers hold the rest.
DRIVER_CPU = 0.01
EPS = 1e-9


@dataclass(frozen=True)
class Demand:
    cpus_per_rank: float
    gpus_per_rank: float
    ranks: int
    strategy: str

    @classmethod
    def of(cls, params: TrialParams) -> Demand:
        gpus = 1.0 if params.device == "gpu" else 0.0
        return cls(params.cpus_per_worker, gpus, params.num_workers, params.placement_strategy)

    def describe(self) -> str:
        per = f"{self.cpus_per_rank:g} CPU" + (f" + {self.gpus_per_rank:g} GPU" if self.gpus_per_rank else "")
        return f"{self.ranks} x ({per}) {self.strategy}"


@dataclass
class Capacity:
    """Free CPUs and GPUs per node."""

    nodes: dict[str, dict[str, float]] = field(default_factory=dict)

    @classmethod
    def of_cluster(cls) -> Capacity:
        import ray

        return cls(
            {
                n["NodeID"]: {"CPU": n["Resources"].get("CPU", 0.0), "GPU": n["Resources"].get("GPU", 0.0)}
                for n in ray.nodes()
                if n.get("Alive")
            }
        )

    @property
    def total_gpus(self) -> float:
        return sum(r["GPU"] for r in self.nodes.values())

    def describe(self) -> str:
        # Largest node first: ray.nodes() order varies from call to call, a message should not.
        sizes = sorted(((r["GPU"], r["CPU"]) for r in self.nodes.values()), reverse=True)
        return ", ".join(f"{cpu:g} CPU + {gpu:g} GPU" for gpu, cpu in sizes) or "no nodes"

    def place(self, demand: Demand) -> list[str] | None:
        """The nodes the ranks and then the trial's driver would use, or None if they do not fit now."""
        free = {n: dict(r) for n, r in self.nodes.items()}
        need = {"CPU": demand.cpus_per_rank, "GPU": demand.gpus_per_rank}

        def fits(node: str, times: int = 1) -> bool:
            return all(free[node][k] + EPS >= v * times for k, v in need.items())

        placed: list[str] = []
        for _ in range(demand.ranks):
            if demand.strategy == "STRICT_PACK":  # every rank on the first node that holds them all
                options = placed[:1] or [n for n in free if fits(n, demand.ranks)][:1]
            elif demand.strategy == "STRICT_SPREAD":  # one rank per node, nodes in order
                options = [n for n in free if n not in placed and fits(n)][:1]
            else:  # PACK and SPREAD are best effort: the node with the most CPUs left
                options = sorted((n for n in free if fits(n)), key=lambda n: -free[n]["CPU"])[:1]
            if not options:
                return None
            free[options[0]]["CPU"] -= need["CPU"]
            free[options[0]]["GPU"] -= need["GPU"]
            placed.append(options[0])
        driver = next((n for n in free if free[n]["CPU"] + EPS >= DRIVER_CPU), None)
        return None if driver is None else [*placed, driver]

    def reserve(self, demand: Demand) -> list[str] | None:
        """Take the trial's resources if they fit now; returns the nodes used (ranks, then driver)."""
        placed = self.place(demand)
        if placed is not None:
            self._add(demand, placed, -1.0)
        return placed

    def release(self, demand: Demand, placed: list[str]) -> None:
        self._add(demand, placed, +1.0)

    def _add(self, demand: Demand, placed: list[str], sign: float) -> None:
        *ranks, driver = placed
        for node in ranks:
            self.nodes[node]["CPU"] += sign * demand.cpus_per_rank
            self.nodes[node]["GPU"] += sign * demand.gpus_per_rank
        self.nodes[driver]["CPU"] += sign * DRIVER_CPU


# A local instance runs at most this many ranks per physical core, and its ranks reserve at most
# this many logical CPUs per logical CPU. CPU ranks beyond that only time-share the cores (every
# step slower, the timings meaningless), and thousands of them exhaust memory and the process
# table before a first step: `--set num_workers=4096` would hang rather than fail.
RANKS_PER_CORE = 4


@dataclass(frozen=True)
class MachineSize:
    """The cores of the machine a local instance runs on, and the largest trial it accepts."""

    cores: int  # physical cores
    logical_cpus: int

    @classmethod
    def of_this_machine(cls) -> MachineSize:
        import psutil

        logical = os.cpu_count() or 1
        return cls(psutil.cpu_count(logical=False) or logical, logical)

    @property
    def max_ranks(self) -> int:
        return RANKS_PER_CORE * self.cores

    @property
    def max_rank_cpus(self) -> int:
        return RANKS_PER_CORE * self.logical_cpus

    def ranks_that_fit(self, cpus_per_worker: float) -> int:
        return min(self.max_ranks, int(self.max_rank_cpus / cpus_per_worker + EPS))

    def describe(self) -> str:
        return f"{self.cores} cores ({self.logical_cpus} logical CPUs)"


def check_local_fit(trials: list[TrialParams], machine: MachineSize | None = None) -> None:
    """Refuse, before a local Ray starts, a trial with more ranks or CPUs than the machine can run."""
    machine = machine or MachineSize.of_this_machine()
    for t in trials:
        fit = machine.ranks_that_fit(t.cpus_per_worker)
        if t.num_workers <= fit:
            continue
        advice = (
            f"use --set num_workers={fit} or fewer"
            if fit
            else f"use --set cpus_per_worker={machine.max_rank_cpus} or less"
        )
        raise UsageError(
            f"num_workers={t.num_workers} x cpus_per_worker={t.cpus_per_worker:g} is more than this machine can "
            f"run: it has {machine.describe()}, and a local Ray runs at most {machine.max_ranks} ranks "
            f"({RANKS_PER_CORE} per core) reserving at most {machine.max_rank_cpus} CPUs; {advice}, "
            "or join a bigger cluster with --address"
        )


def local_num_cpus(trials: list[TrialParams]) -> int:
    """Logical CPUs for a local Ray: enough for the largest trial plus its driver, even on 2 cores."""
    largest = max((t.num_workers * t.cpus_per_worker for t in trials), default=1)
    return max(os.cpu_count() or 1, int(-(-largest // 1)) + 1)
