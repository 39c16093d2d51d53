"""The time of one data-parallel optimizer step on N ranks: per-rank compute, the step's collectives, their overlap,
and the waits the ranks' sharing of a host adds to the collectives (``StepTerms``).

    step = max(compute x slowest + comm x (1 - overlap), comm) + contention

* ``compute``: the per-rank step without communication, from 1-rank trials of the same per-rank step (their
  step time at the micro batch, or a line through their micro batches: ``ComputeCurve``);
* ``slowest``: the slowest rank's compute over the others' (1 for identical ranks; a synchronous step waits for it);
* ``comm``: the collectives the engine runs per optimizer step (``step_traffic``), each timed on the link
  (``analysis.prediction.link_model.Links.collective_s``), bucket by bucket;
* ``overlap``: the share of ``comm`` hidden under compute, measured (``comm_overlap``) or a bound: none (0) or
  full (1); with full overlap a step still lasts as long as its collectives;
* ``contention``: ``hops x per_hop``: the collectives' ring steps (``step_hops``) times a delay per step that
  ``fit_contention`` calibrates on the sweep's own multi-rank trials (their step less the terms above). The probe
  times collectives on idle ranks; in a trial every hand-off of the ring waits for the next rank to be running, and
  ranks that share a host's cores and memory with their own compute (and, on CPUs, with the collective itself)
  are not always running. The wait grows with the ring's steps, not with the bytes, which is what the trials show
  where the idle-link term misses (a 1.8 MB all-reduce taking ten times its probed time at 8 ranks on 16 cores).
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

    def hops(self, links: Links, ranks_per_node: int, nodes: int) -> float:
        return self.per_step * self.buckets * links.hops(self.collective, ranks_per_node, nodes)


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


def step_hops(traffic: list[Transfer], links: Links, ranks_per_node: int, nodes: int) -> float:
    """The ring steps of one optimizer step's collectives (each a hand-off between two ranks)."""
    if ranks_per_node * nodes <= 1:
        return 0.0
    return sum(t.hops(links, ranks_per_node, nodes) for t in traffic)


def step_s(compute: float, comm: float, overlap: float, slowest: float = 1.0) -> float:
    """The step: the slowest rank's compute plus the collectives' exposed part, never less than the collectives."""
    return max(compute * slowest + comm * (1.0 - overlap), comm)


@dataclass(frozen=True)
class StepTerms:
    """One step's terms, each named as the predictions table names it (times in ms)."""

    compute_ms: float  # the per-rank step without communication (1-rank trials)
    comm_ms: float  # the step's collectives on the probed link, ranks otherwise idle
    overlap: float  # the share of comm_ms hidden under compute
    contention_ms: float = 0.0  # hops x the calibrated wait per ring step (``Contention``)
    slowest: float = 1.0  # the slowest rank's compute over the others'

    @property
    def step_ms(self) -> float:
        return step_s(self.compute_ms, self.comm_ms, self.overlap, self.slowest) + self.contention_ms

    @property
    def exposed_comm_ms(self) -> float:
        """What the step spends in communication beyond its compute: the collectives' exposed part and the waits."""
        return self.step_ms - self.compute_ms * self.slowest


@dataclass(frozen=True)
class Contention:
    """The wait per ring step that ranks sharing their host add to the probed collectives, and what it rests on.

    ``per_hop_ms`` is the least-squares slope through the origin of the calibration points' residuals (measured
    step less the idle-link terms) on their ring steps, never negative: a residual below the idle-link terms is
    overlap or noise, not a negative wait. No point (only 1-rank trials): 0, the idle link.
    """

    per_hop_ms: float = 0.0
    points: int = 0  # (worker count, micro batch) medians it was fitted to

    def ms(self, hops: float) -> float:
        return self.per_hop_ms * hops


def fit_contention(hops: list[float], residual_ms: list[float]) -> Contention:
    """``Contention`` from calibration points: each its ring steps and its measured step less the idle-link terms."""
    pairs = [(h, r) for h, r in zip(hops, residual_ms) if h > 0 and math.isfinite(r)]
    if not pairs:
        return Contention()
    slope = sum(h * r for h, r in pairs) / sum(h * h for h, _ in pairs)
    return Contention(max(slope, 0.0), len(pairs))


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
