"""The coupled probe's measurements as the step model reads them: the ranks' coupling as a share of compute.

The coupled probe (``trainers.coupled_probe``, the ``coupled`` rows of a links table) times, at a ranks-per-host
count, one step of the trial's compute on every rank without the all-reduce (``compute``), the step's bucketed
all-reduce on idle ranks (``idle``) and the two together as a trial runs them (``coupled``). What the step spends
beyond its compute is the all-reduce as the coupled ranks see it (``coupled_comm_ms``: the reduce beside the
backward pass and the wait for the other ranks); less the idle all-reduce, which the model's ``comm`` term already
holds, it is the coupling the model's ``contention`` term adds, taken as a share of the compute (``probed_share``)
as ``step_model.fit_contention`` takes a multi-rank trial's.
"""

from __future__ import annotations

import math
import statistics
from dataclasses import dataclass

import pyarrow as pa

from analysis.prediction.step_model import Engine, step_traffic
from analysis.rows.errors import AnalysisError


@dataclass(frozen=True)
class CoupledProbe:
    """One coupled-probe point: ranks on one host, times of one step in ms."""

    ranks_per_node: int
    compute_ms: float  # the load on every rank of the group without the all-reduce, the slowest rank's
    idle_ms: float  # the buckets' all-reduce on idle ranks
    coupled_ms: float  # the load with the buckets' all-reduce beside it, the slowest rank's

    @property
    def coupled_comm_ms(self) -> float:
        """The all-reduce as the coupled ranks see it: what the step spends beyond its compute."""
        return self.coupled_ms - self.compute_ms

    @property
    def probed_share(self) -> float:
        """The coupling beyond the idle all-reduce, as a share of the compute; never negative (as a trial's fit)."""
        return max(self.coupled_comm_ms - self.idle_ms, 0.0) / self.compute_ms


def probed_shares(points: list[CoupledProbe]) -> tuple[tuple[int, float], ...]:
    """(ranks per host, the median ``probed_share`` of its points), ranks ascending; one rank and points without a
    compute time are left out (one rank alone has no coupling)."""
    by_count: dict[int, list[float]] = {}
    for p in points:
        if p.ranks_per_node > 1 and p.compute_ms > 0 and math.isfinite(p.coupled_ms):
            by_count.setdefault(p.ranks_per_node, []).append(p.probed_share)
    return tuple((n, statistics.median(shares)) for n, shares in sorted(by_count.items()))


def coupled_from_table(table: pa.Table) -> list[CoupledProbe]:
    """The ``coupled`` rows of a links table (``raysweep.core.schema.LINKS_COLUMNS``) on one host; [] where none."""
    if "compute_s" not in table.column_names:
        return []
    return [
        CoupledProbe(int(r["ranks"]), r["compute_s"] * 1000.0, r["idle_s"] * 1000.0, r["time_s"] * 1000.0)
        for r in table.to_pylist()
        if r["row"] == "coupled" and (r["nodes"] or 1) == 1
    ]


def bucket_bytes(engine: Engine, trainable_params: int) -> tuple[int, ...]:
    """The gradient buckets the engine all-reduces in one step, as ``step_traffic`` times them: each all-reduce
    transfer split into its buckets (equal shares, repeated ``per_step`` times); ``AnalysisError`` for an engine
    whose step runs other collectives (sharded gradients)."""
    traffic = step_traffic(engine, trainable_params)
    if any(t.collective != "all_reduce" for t in traffic):
        raise AnalysisError(
            f"the coupled probe times all-reduce only: {engine.engine} stage {engine.zero_stage} shards gradients"
        )
    return tuple(int(t.nbytes // t.buckets) for t in traffic for _ in range(t.buckets * t.per_step))
