"""Which rows may be compared: groups of trials that differ in the swept quantity alone."""

from __future__ import annotations

import json
import math
from dataclasses import dataclass, fields

import pandas as pd

from raysweep.core.params import TrialParams

# Parameters that never make two trials different experiments: where the data lives, the seed and the
# repeat index (trials differing only in them are repeats of one configuration).
NOT_A_DIFFERENCE = frozenset({"data_dir", "seed", "repeat"})


@dataclass(frozen=True)
class Comparison:
    """One kind of comparison: the swept parameter and the parameters that move with it."""

    kind: str  # strong | weak | batch
    prefix: str  # group ids are prefix + number, e.g. S1
    swept: str
    derived: tuple[str, ...]
    data_scaling: str | None  # only rows with this data_scaling; None = all rows
    measured: str  # rows without a positive value here have nothing to compare and are skipped

    def key_of(self, params: dict[str, object]) -> dict[str, object]:
        """The grouping key: every trial parameter less the swept one, what moves with it and the seed."""
        dropped = {self.swept, *self.derived, *NOT_A_DIFFERENCE}
        return {k: params[k] for k in sorted(params) if k not in dropped}


# Strong scaling fixes the global batch, so the micro batch is derived from it; weak scaling fixes the
# micro batch, so the global batch and the samples per epoch grow with the workers; a batch sweep moves
# the global batch (and, with a fixed global batch, the accumulation).
STRONG = Comparison("strong", "S", "num_workers", ("micro_batch_per_worker",), "fixed", "timed_s")
WEAK = Comparison("weak", "W", "num_workers", ("global_batch", "samples_per_epoch"), "per_worker", "timed_s")
BATCH = Comparison(
    "batch",
    "B",
    "micro_batch_per_worker",
    ("global_batch", "grad_accum_steps", "samples_per_epoch"),
    None,
    "throughput_per_worker",
)
COMPARISONS = (STRONG, WEAK, BATCH)
PARAMETER_NAMES = tuple(f.name for f in fields(TrialParams))


def trial_params(row: pd.Series) -> dict[str, object]:
    """A trial's parameters: its ``params_json``, or for rows without one its columns named like TrialParams fields."""
    text = row.get("params_json")
    if isinstance(text, str) and text:
        return {k: plain(v) for k, v in json.loads(text).items()}
    return {k: plain(row[k]) for k in PARAMETER_NAMES if k in row.index}


def configuration_key(row: pd.Series) -> str:
    """A trial's parameters less what only tells its repeats apart: trials with one key are repeats of a point."""
    params = {k: v for k, v in trial_params(row).items() if k not in NOT_A_DIFFERENCE}
    return json.dumps(params, sort_keys=True, default=str)


@dataclass
class Group:
    id: str
    comparison: Comparison
    key: dict[str, object]
    trial_ids: list[str]
    swept_values: list[float]

    @property
    def points(self) -> int:
        """Distinct values of the swept quantity (repeats of one value count once)."""
        return len(self.swept_values)

    @property
    def comparable(self) -> bool:
        return self.points >= 2


def plain(value: object) -> object:
    """A hashable, JSON-friendly Python value: numpy scalars become Python ones, nulls of every kind None."""
    if value is None or (not isinstance(value, (str, list, tuple)) and pd.isna(value)):
        return None
    value = value.item() if hasattr(value, "item") else value
    return None if isinstance(value, float) and math.isinf(value) else value


def natural_order(value: object) -> tuple[int, float, str]:
    """Sort numbers by value (8 before 16), then strings, then nulls."""
    if isinstance(value, (int, float)) and not isinstance(value, bool):
        return (0, float(value), "")
    return (1, 0.0, str(value)) if value is not None else (2, 0.0, "")


def find_groups(trials: pd.DataFrame, comparison: Comparison) -> list[Group]:
    """Groups of the comparison in a stable order; rows lacking the swept or the measured value are skipped."""
    rows = trials if comparison.data_scaling is None else trials[trials["data_scaling"] == comparison.data_scaling]
    rows = rows[rows[comparison.swept].notna() & (rows[comparison.measured] > 0)]
    members: dict[str, list[int]] = {}
    keys: dict[str, dict[str, object]] = {}
    for index, row in rows.iterrows():
        key = comparison.key_of(trial_params(row))
        text = json.dumps(key, sort_keys=True, default=str)
        keys[text] = key
        members.setdefault(text, []).append(index)
    groups = []
    ordered = sorted(members, key=lambda t: tuple(natural_order(v) for v in keys[t].values()))
    for number, text in enumerate(ordered, start=1):
        part = trials.loc[members[text]]
        groups.append(
            Group(
                id=f"{comparison.prefix}{number}",
                comparison=comparison,
                key=keys[text],
                trial_ids=list(part["trial_id"]),
                swept_values=sorted({float(v) for v in part[comparison.swept]}),
            )
        )
    return groups


def varying_columns(groups: list[Group]) -> list[str]:
    """Key columns whose values differ between the groups: the ones worth naming in a group's label."""
    columns = sorted({c for g in groups for c in g.key})
    return [c for c in columns if len({str(g.key.get(c)) for g in groups}) > 1]


def trial_labels(trials: pd.DataFrame, ignore: frozenset[str] = frozenset({"seed"})) -> dict[str, str]:
    """Each trial named by the parameters other than ``ignore`` that differ between the trials
    (``micro_batch_per_worker=16 repeat=1``); the trial id only where no parameter differs."""
    params = {t: trial_params(row) for t, row in zip(trials["trial_id"], (r for _, r in trials.iterrows()))}
    names = sorted({k for p in params.values() for k in p} - ignore)
    varied = [k for k in names if len({json.dumps(p.get(k), default=str) for p in params.values()}) > 1]
    short = {"micro_batch_per_worker": "mb", "global_batch": "gb", "num_workers": "n", "grad_accum_steps": "acc"}
    return {t: " ".join(f"{short.get(k, k)}={p.get(k)}" for k in varied) or t for t, p in params.items()}


def group_label(group: Group, columns: list[str]) -> str:
    return ", ".join(f"{c}={group.key.get(c)}" for c in columns) or "all rows"


def group_column(trials: pd.DataFrame, groups: list[Group]) -> pd.Series:
    """The group id of every trial row (None where the trial is in none of these groups)."""
    ids = {trial_id: g.id for g in groups for trial_id in g.trial_ids}
    return trials["trial_id"].map(ids).astype(object).where(trials["trial_id"].isin(ids.keys()), None)


# Parameters that change with the worker count, or do not change a step's work, so a 1-rank trial
# differing only in them runs the same per-rank step: the global batch (and the lr rule it drives),
# the data scaling and sample counts, where ranks are placed, which ranks are slowed, seeds and paths.
NOT_IN_STEP = NOT_A_DIFFERENCE | frozenset(
    {
        "num_workers",
        "global_batch",
        "lr",
        "data_scaling",
        "train_samples",
        "epochs",
        "max_steps_per_epoch",
        "placement_strategy",
        "slow_ranks",
        "slow_factor",
        "checkpoint_every",
        "inject_fault",
    }
)


def step_key(row: pd.Series) -> str:
    """A trial's per-rank step: its parameters less NOT_IN_STEP, with the micro batch and accumulation it ran."""
    params = {k: v for k, v in trial_params(row).items() if k not in NOT_IN_STEP}
    params["micro_batch_per_worker"] = int(row["micro_batch_per_worker"])
    params["grad_accum_steps"] = int(row["grad_accum_steps"]) if pd.notna(row["grad_accum_steps"]) else 1
    return json.dumps(params, sort_keys=True, default=str)
