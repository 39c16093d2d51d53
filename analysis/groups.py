"""Which rows may be compared: groups of trials that differ in the swept quantity alone."""

from __future__ import annotations

import math
from dataclasses import dataclass

import pandas as pd

# What a trial was configured to run.
CONFIG_COLUMNS = (
    "model",
    "dataset",
    "image_size",
    "device",
    "precision",
    "engine",
    "zero_stage",
    "optimizer",
    "lr",
    "compile",
    "num_workers",
    "micro_batch_per_worker",
    "grad_accum_steps",
    "global_batch",
    "placement_strategy",
    "data_scaling",
    "slow_ranks",
    "slow_factor",
    "samples_per_epoch",
    "epochs",
)


@dataclass(frozen=True)
class Comparison:
    """One kind of comparison: the swept column and the derived columns that move with it."""

    kind: str  # strong | weak | batch
    prefix: str  # group ids are prefix + number, e.g. S1
    swept: str
    derived: tuple[str, ...]
    data_scaling: str | None  # only rows with this data_scaling; None = all rows
    measured: str  # rows without a positive value here have nothing to compare and are skipped

    @property
    def key_columns(self) -> tuple[str, ...]:
        return tuple(c for c in CONFIG_COLUMNS if c != self.swept and c not in self.derived)


# Strong scaling fixes the global batch, so the micro batch is derived from it; weak scaling fixes the
# micro batch, so the global batch and the samples per epoch grow with the workers; a batch sweep moves
# the global batch (and, with a fixed global batch, the accumulation) and the rounding of samples per epoch.
STRONG = Comparison("strong", "S", "num_workers", ("micro_batch_per_worker",), "fixed", "train_time_s")
WEAK = Comparison("weak", "W", "num_workers", ("global_batch", "samples_per_epoch"), "per_worker", "train_time_s")
BATCH = Comparison(
    "batch",
    "B",
    "micro_batch_per_worker",
    ("global_batch", "grad_accum_steps", "samples_per_epoch"),
    None,
    "throughput_per_worker",
)
COMPARISONS = (STRONG, WEAK, BATCH)


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
    columns = list(comparison.key_columns)
    keys = pd.DataFrame({c: [plain(v) for v in rows[c]] for c in columns}, index=rows.index, dtype=object)
    keys["lr"] = lr_keys(keys, rows)
    members: dict[tuple, list[int]] = {}
    for index, values in zip(keys.index, keys.itertuples(index=False)):
        members.setdefault(tuple(values), []).append(index)
    groups = []
    for number, key in enumerate(sorted(members, key=lambda k: tuple(map(natural_order, k))), start=1):
        part = trials.loc[members[key]]
        groups.append(
            Group(
                id=f"{comparison.prefix}{number}",
                comparison=comparison,
                key=dict(zip(comparison.key_columns, key)),
                trial_ids=list(part["trial_id"]),
                swept_values=sorted({float(v) for v in part[comparison.swept]}),
            )
        )
    return groups


def lr_keys(keys: pd.DataFrame, rows: pd.DataFrame) -> pd.Series:
    """The learning rate as a group key: ``rule`` where every row of the would-be group follows the batch rule.

    The rule makes the rate move with the global batch, which weak scaling and batch sweeps change,
    so the raw rate would split rows that differ in the swept quantity alone. Deciding per group,
    not per row, keeps a fixed explicit rate that happens to equal the rule at one batch together;
    with a single global batch the raw rate already groups correctly and is kept.
    """
    others = keys.drop(columns="lr")
    members: dict[tuple, list[int]] = {}
    for index, values in zip(others.index, others.itertuples(index=False)):
        members.setdefault(tuple(values), []).append(index)
    lr = keys["lr"].copy()
    for indices in members.values():
        if rows.loc[indices, "lr_follows_rule"].all() and rows.loc[indices, "global_batch"].nunique() > 1:
            lr[indices] = "rule"
    return lr


def varying_columns(groups: list[Group]) -> list[str]:
    """Key columns whose values differ between the groups: the ones worth naming in a group's label."""
    if not groups:
        return []
    columns = groups[0].comparison.key_columns
    return [c for c in columns if len({str(g.key[c]) for g in groups}) > 1]


def group_label(group: Group, columns: list[str]) -> str:
    return ", ".join(f"{c}={group.key[c]}" for c in columns) or "all rows"


def group_column(trials: pd.DataFrame, groups: list[Group]) -> pd.Series:
    """The group id of every trial row (None where the trial is in none of these groups)."""
    ids = {trial_id: g.id for g in groups for trial_id in g.trial_ids}
    return trials["trial_id"].map(ids).astype(object).where(trials["trial_id"].isin(ids.keys()), None)
