"""``--find-max-batch``: the largest micro batch per worker that fits, for each configuration of a space.

A configuration is a trial of the space less its micro batch. For each one the search doubles the
micro batch from the smallest the space asks for until a probe (a short real trial) runs out of
memory, then bisects between the largest batch that fitted and the smallest that did not, as
timm's benchmark and Determined's DeepSpeed search do. A probe is never repeated: an
out-of-memory batch stays failed and bounds the search from above. The probes of all
configurations that still search are handed over together, one round at a time, so a cluster
runs them side by side.

The sweep then runs the space's micro-batch grid clipped to the edge (values above it become the
edge), or at the edge when the space has one micro batch.
"""

from __future__ import annotations

import dataclasses
import json
from collections.abc import Callable
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import pyarrow as pa

from raysweep.core.errors import UsageError
from raysweep.core.params import TrialParams
from raysweep.core.schema import MAX_BATCH
from raysweep.core.status import TrialStatus
from raysweep.core.store import ResultStore

# A probe is 2 warm-up steps (memory settles: the optimizer state exists after the first step)
# and 3 timed ones (a first throughput), in one epoch without checkpoints or a profiled window.
PROBE_WARMUP_STEPS = 2
PROBE_TIMED_STEPS = 3


@dataclass(frozen=True)
class ProbeOutcome:
    """What one probe trial says: its status (``completed | oom | failed``) and what it measured."""

    status: TrialStatus
    peak_mem_gib: float | None = None
    throughput: float | None = None
    error: str | None = None

    @classmethod
    def of_trial_row(cls, row: dict[str, Any]) -> ProbeOutcome:
        """From the probe's row of the ``trials`` table."""
        return cls(TrialStatus(row["status"]), row.get("peak_mem_gib"), row.get("throughput"), row.get("error"))

    @property
    def fits(self) -> bool:
        return self.status is TrialStatus.COMPLETED


# One round of probes in, their outcomes out, in the same order.
Probe = Callable[[list[TrialParams]], list[ProbeOutcome]]


# The command line's names of the limits it sets.
LIMIT_FLAGS = {"max_probes": "--max-batch-probes", "resolution": "--max-batch-resolution"}


@dataclass(frozen=True)
class SearchLimits:
    """How far and how finely each configuration is searched."""

    max_probes: int = 12  # per configuration
    max_micro_batch: int = 16384  # doubling stops here
    resolution: int = 1  # bisection stops when the edge is known to within this many samples

    def __post_init__(self) -> None:
        for name in ("max_probes", "max_micro_batch", "resolution"):
            if getattr(self, name) < 1:
                flag = LIMIT_FLAGS.get(name, "")
                raise UsageError(
                    f"find-max-batch: {name}{f' ({flag})' if flag else ''} must be >= 1, got {getattr(self, name)}"
                )


@dataclass
class BatchSearch:
    """Doubling, then bisection, for one configuration; ``next_batch`` is None once it is done."""

    start: int
    limits: SearchLimits
    outcomes: dict[int, ProbeOutcome] = field(default_factory=dict)  # in the order probed

    @property
    def first_oom(self) -> int | None:
        return min((b for b, o in self.outcomes.items() if o.status is TrialStatus.OOM), default=None)

    @property
    def largest_fit(self) -> int | None:
        """The largest batch that fitted below every out-of-memory one (memory grows with the batch)."""
        ceiling = self.first_oom
        fitted = [b for b, o in self.outcomes.items() if o.fits and (ceiling is None or b < ceiling)]
        return max(fitted, default=None)

    @property
    def error(self) -> str | None:
        return next(
            (o.error or TrialStatus.FAILED.value for o in self.outcomes.values() if o.status is TrialStatus.FAILED),
            None,
        )

    def next_batch(self) -> int | None:
        if self.error is not None or len(self.outcomes) >= self.limits.max_probes:
            return None
        fit, oom = self.largest_fit, self.first_oom
        if oom is None:  # still doubling
            if fit is None:
                return self.start
            return min(2 * fit, self.limits.max_micro_batch) if fit < self.limits.max_micro_batch else None
        low = fit or 0
        return (low + oom) // 2 if oom - low > self.limits.resolution else None

    def record(self, batch: int, outcome: ProbeOutcome) -> None:
        if batch in self.outcomes:
            raise ValueError(f"micro batch {batch} was probed already")
        self.outcomes[batch] = outcome

    def row(self, configuration: str) -> dict[str, Any]:
        best = self.outcomes.get(self.largest_fit)
        return {
            "configuration": configuration,
            "max_micro_batch": self.largest_fit,
            "first_oom_micro_batch": self.first_oom,
            "peak_mem_gib": best.peak_mem_gib if best else None,
            "throughput": best.throughput if best else None,
            "probes": len(self.outcomes),
            "probed_micro_batches": list(self.outcomes),
            "probe_statuses": [o.status.value for o in self.outcomes.values()],
            "error": self.error,
        }


# What a configuration's trials differ in: the micro batch the search moves, and what tells repeats apart.
NOT_IN_CONFIGURATION = ("micro_batch_per_worker", "seed", "repeat")


def configuration_key(params: TrialParams) -> str:
    """The trial's parameters without its micro batch and its repeat (seed and index), as canonical JSON."""
    values = params.to_dict()
    for name in NOT_IN_CONFIGURATION:
        del values[name]
    return json.dumps(values, sort_keys=True)


def configurations(trials: list[TrialParams]) -> dict[str, list[TrialParams]]:
    """The space's trials grouped by configuration, in the space's order."""
    groups: dict[str, list[TrialParams]] = {}
    for trial in trials:
        if trial.global_batch > 0:
            raise UsageError(
                f"--find-max-batch searches micro_batch_per_worker, but global_batch={trial.global_batch} fixes "
                "it; set global_batch=0"
            )
        groups.setdefault(configuration_key(trial), []).append(trial)
    return groups


def search_plan(trials: list[TrialParams], limits: SearchLimits) -> list[str]:
    """What ``--find-max-batch`` would probe, for a dry run: the search, then each configuration's first probe."""
    groups = configurations(trials)
    plural = "s" if len(groups) != 1 else ""
    lines = [
        f"find-max-batch: {len(groups)} configuration{plural} would be probed before the sweep, each with at most "
        f"{limits.max_probes} probe trials of {PROBE_WARMUP_STEPS + PROBE_TIMED_STEPS} steps: doubling from the "
        f"smallest micro batch of its grid (at most {limits.max_micro_batch}) until one runs out of memory, then "
        f"bisection to within {limits.resolution}; each grid is then clipped to its edge"
    ]
    # A configuration is named by what tells it from the others (the full key is in the table).
    varied = [
        name
        for name in TrialParams.field_names()
        if name not in NOT_IN_CONFIGURATION and len({str(getattr(t, name)) for t in trials}) > 1
    ]
    for number, group in enumerate(groups.values()):
        grid = sorted({t.micro_batch_per_worker for t in group})
        named = " ".join(f"{name}={getattr(group[0], name)}" for name in varied)
        lines.append(
            f"  configuration {number}{' ' + named if named else ''}: first probe at micro batch {grid[0]}, grid {grid}"
        )
    return lines


def probe_trials(params: TrialParams, micro_batch: int) -> TrialParams:
    """A short trial of the configuration at ``micro_batch``: one epoch of a few steps, nothing saved."""
    return dataclasses.replace(
        params,
        micro_batch_per_worker=micro_batch,
        epochs=1,
        warmup_steps=PROBE_WARMUP_STEPS,
        max_steps_per_epoch=PROBE_WARMUP_STEPS + PROBE_TIMED_STEPS,
        checkpoint_every=0,
        profile_steps=0,
    )


def find_max_batches(trials: list[TrialParams], probe: Probe, limits: SearchLimits) -> list[dict[str, Any]]:
    """One ``max_batch`` row per configuration of ``trials`` (without ``sweep``), probing round by round."""
    groups = configurations(trials)
    searches = {key: BatchSearch(min(t.micro_batch_per_worker for t in group), limits) for key, group in groups.items()}
    while True:
        proposed = [(key, batch) for key, search in searches.items() if (batch := search.next_batch()) is not None]
        if not proposed:
            return [search.row(key) for key, search in searches.items()]
        outcomes = probe([probe_trials(groups[key][0], batch) for key, batch in proposed])
        if len(outcomes) != len(proposed):
            raise ValueError(f"the probe answered {len(outcomes)} outcomes for {len(proposed)} probes")
        for (key, batch), outcome in zip(proposed, outcomes):
            searches[key].record(batch, outcome)


def max_batch_path(store: ResultStore) -> Path:
    """Where the sweep's search writes its table (one file: the search ends once, in the sweep's process)."""
    return store.table_dir("max_batch") / "max_batch.parquet"


def max_batch_table(rows: list[dict[str, Any]], sweep: str) -> pa.Table:
    return pa.Table.from_pylist([{"sweep": sweep, **row} for row in rows], schema=MAX_BATCH)


def clip_to_edges(trials: list[TrialParams], rows: list[dict[str, Any]]) -> tuple[list[TrialParams], list[str]]:
    """The trials to sweep: each configuration's micro batches clipped to its edge.

    Batches above the edge become the edge (so the edge itself is run once); a configuration with
    one micro batch runs at its edge; one where nothing fitted is dropped, with a note.
    """
    edges = {row["configuration"]: row["max_micro_batch"] for row in rows}
    kept, notes = [], []
    for key, group in configurations(trials).items():
        edge = edges[key]
        if edge is None:
            notes.append(f"dropped: no micro batch fits configuration {key} (the smallest probed ran out of memory)")
            continue
        grid = sorted({t.micro_batch_per_worker for t in group})
        clipped = [edge] if len(grid) == 1 else sorted({min(b, edge) for b in grid})
        # The trials of a configuration differ only in their micro batch and repeat (seed and index): each
        # clipped batch runs once per copy of the grid's first, which carries every repeat (and num_samples).
        copies = [t for t in group if t.micro_batch_per_worker == grid[0]]
        kept += [dataclasses.replace(copy, micro_batch_per_worker=b) for b in clipped for copy in copies]
    return kept, notes
