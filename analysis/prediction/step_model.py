"""The time of one data-parallel optimizer step on N ranks: per-rank compute, the step's collectives, their overlap,
and the time the ranks' coupling adds in proportion to their compute (``StepTerms``).

    step = max(compute x slowest + contention + comm x (1 - overlap), comm)

* ``compute``: the per-rank step without communication, from 1-rank trials of the same per-rank step (their
  step time at the micro batch, or a line through their micro batches: ``ComputeCurve``);
* ``slowest``: the slowest rank's compute over the others' (1 for identical ranks; a synchronous step waits for it);
* ``comm``: the collectives the engine runs per optimizer step (``step_traffic``), each timed on the link
  (``analysis.prediction.link_model.Links.collective_s``), bucket by bucket;
* ``overlap``: the share of ``comm`` hidden under compute, measured (``comm_overlap``) or a bound: none (0) or
  full (1); with full overlap a step still lasts as long as its collectives;
* ``contention``: ``share(ranks per host) x compute x slowest``: what the ranks' coupling adds to a step beyond
  the collectives timed on idle ranks, each count's ``share`` calibrated by ``fit_contention`` on the sweep's own
  multi-rank trials (their step less the terms above, on their compute). In a trial the collectives run beside the
  backward pass (on CPU ranks gloo's threads reduce the gradients while the rank computes) and every rank waits for
  the others at each one; the 16-core validation finds that time growing with the compute, not with the
  collectives' bytes or ring steps, and by a share that depends on the ranks' count. It is not the host's cores or
  memory: independent 1-rank trials at once, with no collectives between them, run as fast as one alone
  (``docs/results/cpu16-prediction/host_sharing.csv``). Keyed on the ranks a host holds, as one host's trials
  calibrate it; a rank alone on its host (one a node) gets none, since no trial measured it across hosts. Where
  no multi-rank trial calibrates a count, the coupled probe's share at that count
  (``analysis.prediction.coupling.CoupledProbe.probed_share``: its coupled all-reduce less the idle one, on its
  compute) stands in for the extrapolation.
"""

from __future__ import annotations

import math
from dataclasses import dataclass

import numpy as np

from analysis.prediction.link_model import Links
from analysis.rows.errors import AnalysisError

# Bucket sizes the engines use by default: DDP's bucket_cap_mb (25 MiB); DeepSpeed's reduce and all-gather
# bucket sizes (5e8 elements, ``reduce_bucket_size`` and ``allgather_bucket_size`` in its ZeRO config).
DDP_BUCKET_BYTES = 25 * 2**20
DEEPSPEED_BUCKET_ELEMENTS = 500_000_000


@dataclass(frozen=True)
class Transfer:
    """A collective the engine runs per optimizer step: its buffer, the calls it is split into, how often."""

    collective: str
    nbytes: float
    buckets: int = 1
    per_step: int = 1  # times per optimizer step (per micro batch under accumulation for sharded gradients)

    def time_s(self, links: Links, ranks_per_node: int, nodes: int) -> float:
        each = links.collective_s(self.collective, self.nbytes / self.buckets, ranks_per_node, nodes)
        return self.per_step * self.buckets * each


@dataclass(frozen=True)
class Engine:
    """What decides a step's collectives: the engine, its ZeRO stage, dtypes and accumulation."""

    engine: str  # deepspeed | ddp | fsdp
    zero_stage: int = 0
    grad_bytes: int = 4  # the reduce dtype's element size (``trainers.numerics.gradient_reduce_dtype``)
    param_bytes: int = 4  # the element size of the parameters an all-gather carries
    grad_accum: int = 1
    reshard_after_forward: bool = True

    @classmethod
    def of_trial(cls, row: dict) -> Engine:
        """From a trials row (its configuration columns, ``amp`` as the trial resolved it)."""
        low = row.get("precision") in ("bf16", "fp16")
        engine = row.get("engine") or "deepspeed"
        deepspeed_low = engine == "deepspeed" and row.get("amp") == "deepspeed" and low
        return cls(
            engine=engine,
            zero_stage=int(row.get("zero_stage") or 0),
            grad_bytes=2 if deepspeed_low else 4,
            param_bytes=2 if deepspeed_low or (engine == "fsdp" and low) else 4,
            grad_accum=int(row.get("grad_accum_steps") or 1),
            reshard_after_forward=bool(row.get("reshard_after_forward", True)),
        )


def step_traffic(engine: Engine, trainable_params: int) -> list[Transfer]:
    """The collectives of one optimizer step, per rank, for ``trainable_params`` parameters."""
    grads, params = trainable_params * engine.grad_bytes, trainable_params * engine.param_bytes
    accum = engine.grad_accum
    if engine.engine == "ddp":  # reduced once per optimizer step (no_sync between), in DDP's buckets
        return [Transfer("all_reduce", grads, max(1, math.ceil(grads / DDP_BUCKET_BYTES)))]
    ds_buckets = max(1, math.ceil(trainable_params / DEEPSPEED_BUCKET_ELEMENTS))
    if engine.engine == "deepspeed" and engine.zero_stage == 0:
        return [Transfer("all_reduce", grads, ds_buckets)]
    if engine.engine == "deepspeed" and engine.zero_stage in (1, 2):
        # stage 1 reduces at the accumulation boundary; stage 2 shards gradients, so reduces every micro batch
        per_step = accum if engine.zero_stage == 2 else 1
        return [Transfer("reduce_scatter", grads, ds_buckets, per_step), Transfer("all_gather", params, ds_buckets)]
    if engine.engine in ("deepspeed", "fsdp"):
        # parameters gathered for forward and again for backward (once if kept after forward), gradients scattered
        gathers = 2 if engine.engine == "deepspeed" or engine.reshard_after_forward else 1
        return [Transfer("all_gather", params, 1, gathers * accum), Transfer("reduce_scatter", grads, 1, accum)]
    raise AnalysisError(f"unknown engine {engine.engine!r}: deepspeed, ddp or fsdp")


def comm_s(traffic: list[Transfer], links: Links, ranks_per_node: int, nodes: int) -> float:
    if ranks_per_node * nodes <= 1:
        return 0.0
    return sum(t.time_s(links, ranks_per_node, nodes) for t in traffic)


def step_s(compute: float, comm: float, overlap: float, slowest: float = 1.0) -> float:
    """The step: the slowest rank's compute plus the collectives' exposed part, never less than the collectives."""
    return max(compute * slowest + comm * (1.0 - overlap), comm)


@dataclass(frozen=True)
class StepTerms:
    """One step's terms, each named as the predictions table names it (times in ms)."""

    compute_ms: float  # the per-rank step without communication (1-rank trials)
    comm_ms: float  # the step's collectives on the probed link, ranks otherwise idle
    overlap: float  # the share of comm_ms hidden under compute
    contention_ms: float = 0.0  # what the ranks' coupling adds in proportion to compute (``Contention``)
    slowest: float = 1.0  # the slowest rank's compute over the others'

    @property
    def step_ms(self) -> float:
        return step_s(self.compute_ms * self.slowest + self.contention_ms, self.comm_ms, self.overlap)

    @property
    def exposed_comm_ms(self) -> float:
        """What the step spends in communication beyond its compute (the contention included in the compute)."""
        return self.step_ms - self.compute_ms * self.slowest - self.contention_ms


@dataclass(frozen=True)
class Contention:
    """What the ranks' coupling adds to a step as a share of its compute, by how many ranks a host holds.

    Each calibrated count's share is the least-squares slope through the origin of its points' residuals
    (measured step less the idle-link terms) on their compute (times the slowest rank's factor), never negative: a
    residual below the idle-link terms is overlap or noise, not a gain. Between counts the share is linear in the
    ranks a host holds, through 0 at one rank; beyond the largest calibrated count it stays at that count's share
    (the prediction is then marked extrapolated). No point (only 1-rank trials, or ranks alone on their hosts): 0.
    """

    shares: tuple[tuple[int, float], ...] = ()  # (ranks per host, share), ranks ascending
    points: int = 0  # (worker count, micro batch) medians it was fitted to
    probed: tuple[int, ...] = ()  # the counts whose share is the coupled probe's, not the trials'

    def source(self, ranks_per_node: int) -> str:
        """Where the count's share comes from: trials, probe, between (interpolated), beyond (flat) or none."""
        counts = [n for n, _ in self.shares]
        if ranks_per_node <= 1 or not counts:
            return "none"
        if ranks_per_node in counts:
            return "probe" if ranks_per_node in self.probed else "trials"
        return "beyond" if ranks_per_node > counts[-1] else "between"

    def share(self, ranks_per_node: int) -> float:
        if ranks_per_node <= 1 or not self.shares:
            return 0.0
        counts, shares = zip(*self.shares)
        return float(np.interp(ranks_per_node, [1, *counts], [0.0, *shares]))  # flat beyond the largest count

    def ms(self, compute_ms: float, ranks_per_node: int) -> float:
        return self.share(ranks_per_node) * compute_ms


def fit_contention(points: list[tuple[int, float, float]], probed: tuple[tuple[int, float], ...] = ()) -> Contention:
    """``Contention`` from calibration points of multi-rank trials: each (ranks per host, its compute times the
    slowest rank's factor, its measured step less the idle-link terms); ``probed``: (ranks per host, share) from the
    coupled probe, taken at the counts no trial calibrates (a trial measures the step itself, so it wins)."""
    kept = [(n, c, r) for n, c, r in points if n > 1 and c > 0 and math.isfinite(r)]
    shares = {}
    for count in sorted({n for n, _, _ in kept}):
        pairs = [(c, r) for n, c, r in kept if n == count]
        slope = sum(c * r for c, r in pairs) / sum(c * c for c, _ in pairs)
        shares[count] = max(slope, 0.0)
    filled = {n: max(share, 0.0) for n, share in probed if n > 1 and n not in shares}
    return Contention(tuple(sorted((shares | filled).items())), len(kept), tuple(sorted(filled)))


@dataclass(frozen=True)
class ComputeCurve:
    """Per-rank step time against micro batch, from 1-rank trials: measured points, a line between them.

    With one measured micro batch the time is taken proportional to the micro batch (no fixed cost known).
    """

    micro_batches: tuple[float, ...]
    step_ms: tuple[float, ...]

    def at(self, micro_batch: float) -> float:
        points = dict(zip(self.micro_batches, self.step_ms))
        if micro_batch in points:
            return points[micro_batch]
        if len(points) == 1:
            (b, t), *_ = points.items()
            return t * micro_batch / b
        slope, intercept = np.polyfit(self.micro_batches, self.step_ms, 1)
        return float(max(intercept + slope * micro_batch, 0.0))

    def source(self, micro_batch: float) -> str:
        if micro_batch in self.micro_batches:
            return "measured"
        return "proportional" if len(set(self.micro_batches)) == 1 else "line"
