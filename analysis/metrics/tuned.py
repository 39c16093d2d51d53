"""Accuracy against batch size with the learning rate tuned per batch size, beside the scaling rule's.

A sweep searched the learning rate where, within one configuration, some batch size ran at more than one
learning rate (``tuned_batch``: an Optuna study per batch size and repeat). Per batch size and repeat the
tuned value is the best completed trial's validation accuracy (the study's pick; a scheduler-stopped trial
has no final accuracy); the scaling rule's value is the completed trial at the optimizer's scaling-rule
learning rate and the default warm-up (each study's first trial). A batch size's point is the median of its
repeats' values, with their range.

The finding: whether accuracy still falls from the best batch size to the largest once the learning rate is
tuned, under the report's rule (``analysis.rows.evidence``): the best batch size's repeats against the largest's.
"""

from __future__ import annotations

import math
from dataclasses import dataclass, field, fields

import pandas as pd

from analysis.rows.budget import Budget, budget_of, step_matched
from analysis.rows.evidence import Family, Verdict, compare
from analysis.rows.groups import BATCH, Comparison, Group, find_groups
from raysweep.core.params import LR_RULES, TrialParams, rule_learning_rate

SEARCHED = ("lr", "lr_warmup")  # what a tuned sweep searches per batch size; the rest of a trial is its group's
TUNED = Comparison("tuned", "T", "micro_batch_per_worker", (*BATCH.derived, *SEARCHED), None, "throughput_per_worker")
DEFAULT_WARMUP = next(f.default for f in fields(TrialParams) if f.name == "lr_warmup")
RULE_TOLERANCE = 1e-6  # relative: a learning rate written back from the rule's float is the rule's


@dataclass(frozen=True)
class AccuracyCurve:
    """Validation accuracy per batch size: one value per repeat (a study's best, or the rule's trial)."""

    label: str
    values: dict[float, tuple[float, ...]]  # micro batch -> one value per repeat

    def points(self) -> pd.DataFrame:
        """One row per batch size: the median of its repeats, their range and count."""
        rows = [
            {
                "micro_batch_per_worker": batch,
                "val_accuracy": float(pd.Series(v).median()),
                "accuracy_min": min(v),
                "accuracy_max": max(v),
                "repeats": len(v),
            }
            for batch, v in sorted(self.values.items())
            if v
        ]
        return pd.DataFrame(
            rows, columns=["micro_batch_per_worker", "val_accuracy", "accuracy_min", "accuracy_max", "repeats"]
        )

    def median(self, batch: float) -> float:
        values = self.values.get(batch, ())
        return float(pd.Series(values).median()) if values else math.nan


@dataclass(frozen=True)
class Decline:
    """From the batch size with the best median accuracy to the largest; ``verdict`` None: the largest is best."""

    peak: float
    largest: float
    verdict: Verdict | None

    def sentence(self, curve: AccuracyCurve, family: Family | None = None) -> str:
        if self.verdict is None:
            return f"no decline: accuracy is highest at the largest micro batch, {self.largest:g}"
        drop = curve.median(self.peak) - curve.median(self.largest)
        return (
            f"{drop:.3f} lower at micro batch {self.largest:g} than at {self.peak:g} "
            f"({spread(curve, self.largest)} vs {spread(curve, self.peak)}): {self.verdict.sentence(family)}"
        )


def decline(curve: AccuracyCurve) -> Decline | None:
    """The rule on the fall at large batch; None with fewer than two batch sizes measured."""
    batches = sorted(b for b, v in curve.values.items() if v)
    if len(batches) < 2:
        return None
    peak = max(batches, key=lambda b: (curve.median(b), -b))  # of equal medians, the smaller batch
    largest = batches[-1]
    if peak == largest:
        return Decline(peak, largest, None)
    return Decline(peak, largest, compare(curve.values[peak], curve.values[largest]))


def spread(curve: AccuracyCurve, batch: float) -> str:
    values = curve.values[batch]
    if len(values) < 2:
        return f"{values[0]:.3f}, 1 repeat"
    return f"median {curve.median(batch):.3f}, range {min(values):.3f}–{max(values):.3f} over {len(values)} repeats"


@dataclass(frozen=True)
class TunedResult:
    group: Group
    tuned: AccuracyCurve
    rule: AccuracyCurve
    best: pd.DataFrame  # the best completed trial per batch size and repeat: trial_id, lr, lr_warmup, accuracy
    budgets: dict[float, Budget] = field(default_factory=dict)  # per micro batch: what its trials trained on

    @property
    def step_matched(self) -> bool:
        """Every batch size trained within ``STEP_FACTOR`` of the same optimizer steps (the step-matched arm)."""
        budgets = list(self.budgets.values())
        return len(budgets) >= 2 and all(step_matched(budgets[0], b) for b in budgets[1:])

    def arm(self) -> str:
        """``fixed epochs`` or ``step-matched``, with what the batch sizes trained."""
        if not self.budgets:
            return "optimizer steps not recorded"
        steps = sorted(b.optimizer_steps for b in self.budgets.values())
        kind = "step-matched" if self.step_matched else "fixed epochs"
        return f"{kind}: {steps[0]:g} to {steps[-1]:g} optimizer steps across the batch sizes"

    def shortfalls(self) -> dict[float, float]:
        """Batch sizes where the tuned median is below the rule's: by how much."""
        out = {}
        for batch in sorted(set(self.tuned.values) & set(self.rule.values)):
            gap = self.rule.median(batch) - self.tuned.median(batch)
            if gap > 0:
                out[batch] = gap
        return out

    def verdicts(self) -> list[Verdict]:
        """The declines tested: the tuned curve's and the scaling rule's, where each has one."""
        found = (decline(self.tuned), decline(self.rule))
        return [f.verdict for f in found if f is not None and f.verdict is not None]

    def answer(self, family: Family | None = None) -> str | None:
        """The report's first sentence for a sweep that tuned the learning rate; None without two batch sizes.
        ``family``: the report's comparisons, for Holm's mark (``analysis.rows.evidence.Family``)."""
        found = decline(self.tuned)
        if found is None:
            return None
        if found.verdict is None:
            return (
                f"With the learning rate tuned per batch size, accuracy is highest at the largest micro batch, "
                f"{found.largest:g} ({spread(self.tuned, found.largest)}): no decline at large batch."
            )
        return (
            f"With the learning rate tuned per batch size, validation accuracy at micro batch {found.largest:g} is "
            f"{self.tuned.median(found.largest):.3f} against {self.tuned.median(found.peak):.3f} at "
            f"{found.peak:g}; that the decline at large batch survives tuning is {found.verdict.sentence(family)}."
        )

    def finding(self, family: Family | None = None) -> str:
        """Whether the decline at large batch survives tuning, with the scaling rule's beside it; ``family`` as in
        ``answer``."""
        tuned, rule = decline(self.tuned), decline(self.rule)
        text = f"Accuracy vs batch size, tuned learning rate ({self.group.id}; {self.arm()}): "
        if tuned is None:
            text += "fewer than two batch sizes have a completed trial"
        elif tuned.verdict is None:
            text += f"{tuned.sentence(self.tuned, family)}, so there is no decline at large batch to survive tuning"
        elif tuned.verdict.established:
            text += f"the decline at large batch survives tuning; {tuned.sentence(self.tuned, family)}"
        else:
            text += (
                "whether the decline at large batch survives tuning is not established; "
                f"{tuned.sentence(self.tuned, family)}"
            )
        if rule is not None:
            text += f". With the scaling rule's learning rate: {rule.sentence(self.rule, family)}"
        short = self.shortfalls()
        if short:
            where = ", ".join(f"micro batch {b:g} by {gap:.3f}" for b, gap in short.items())
            text += f". The tuned best is below the scaling rule's at {where}"
        elif self.rule.values:
            text += ". The tuned best is at least the scaling rule's at every batch size with both"
        return text + "."


def is_rule_lr(row: pd.Series) -> bool:
    """The trial ran at its optimizer's scaling-rule learning rate and the default warm-up."""
    if row.get("optimizer") not in LR_RULES or pd.isna(row.get("global_batch")) or pd.isna(row.get("lr")):
        return False
    rule = rule_learning_rate(str(row["optimizer"]), float(row["global_batch"]))
    return math.isclose(float(row["lr"]), rule, rel_tol=RULE_TOLERANCE) and math.isclose(
        float(row["lr_warmup"]), DEFAULT_WARMUP
    )


def searched_lr(rows: pd.DataFrame) -> bool:
    """Some batch size of these trials ran at more than one learning rate."""
    return bool((rows.groupby("micro_batch_per_worker")["lr"].nunique() > 1).any())


def tuned_analysis(trials: pd.DataFrame) -> list[TunedResult]:
    """One result per configuration that searched the learning rate at two or more batch sizes.

    ``trials``: every measured trial (stopped ones with a blank accuracy count for the search, not the best).
    """
    if not {"lr", "lr_warmup", "val_accuracy"} <= set(trials.columns):
        return []
    results = []
    for group in find_groups(trials, TUNED):
        rows = trials[trials["trial_id"].isin(group.trial_ids)]
        if not group.comparable or not searched_lr(rows):
            continue
        rows = rows.assign(repeat=rows["repeat"].fillna(0) if "repeat" in rows else 0)
        done = rows[rows["val_accuracy"].notna()]
        best = done.loc[done.groupby(["micro_batch_per_worker", "repeat"])["val_accuracy"].idxmax()]
        rule_rows = done[done.apply(is_rule_lr, axis=1)] if len(done) else done
        budgets = {float(b): budget_of(r) for b, r in done.groupby("micro_batch_per_worker")}
        results.append(
            TunedResult(
                group,
                curve("tuned learning rate", best),
                curve("scaling-rule learning rate", rule_rows),
                best[["micro_batch_per_worker", "repeat", "trial_id", "lr", "lr_warmup", "val_accuracy"]]
                .sort_values(["micro_batch_per_worker", "repeat"])
                .reset_index(drop=True),
                {b: v for b, v in budgets.items() if v is not None},
            )
        )
    return results


def curve(label: str, rows: pd.DataFrame) -> AccuracyCurve:
    by_batch = rows.groupby("micro_batch_per_worker")["val_accuracy"]
    return AccuracyCurve(label, {float(b): tuple(float(v) for v in values) for b, values in by_batch})


def explanation(results: list[TunedResult], family: Family | None = None) -> str | None:
    """Both arms' declines and ``supported``'s verdict; None without one arm of each."""
    said = arms_said(results, family)
    return None if said is None else f"Fixed epochs beside step-matched, tuned learning rate: {said[0]}. So {said[1]}."


def supported(results: list[TunedResult], family: Family | None = None) -> str | None:
    """Which explanation of a fall at large batch the data support (a sentence); None without one arm of each."""
    said = arms_said(results, family)
    return None if said is None else said[1][0].upper() + said[1][1:] + "."


def arms_said(results: list[TunedResult], family: Family | None) -> tuple[str, str] | None:
    """From a fixed-epochs arm beside a step-matched one (``tuned_batch``'s two): each arm's decline, and which
    explanation the data support: a fall at both is the batch size's; a fall at fixed epochs alone is too few
    optimizer steps. None without one arm of each."""
    fixed = next((r for r in results if r.budgets and not r.step_matched), None)
    matched = next((r for r in results if r.step_matched), None)
    if fixed is None or matched is None:
        return None
    falls = [decline(r.tuned) for r in (fixed, matched)]
    held = [f is not None and f.verdict is not None and f.verdict.established for f in falls]
    # per comparison: each arm's sentence carries Holm's mark where the family does not hold it
    said = "; ".join(
        f"{name} ({r.arm()}): {f.sentence(r.tuned, family) if f is not None else 'fewer than two batch sizes'}"
        for name, r, f in (("fixed epochs", fixed, falls[0]), ("step-matched", matched, falls[1]))
    )
    if held == [True, True]:
        verdict = "the fall holds at equal optimizer steps: the data support a large-batch effect"
    elif held == [True, False]:
        verdict = (
            "the fall at fixed epochs is not established at equal optimizer steps: the data support too few steps at "
            "large batch, not the batch size itself"
        )
    elif held == [False, True]:
        verdict = "the fall is established at equal optimizer steps only: the data support a large-batch effect"
    else:
        verdict = "no fall is established in either arm: the data support neither explanation"
    return said, verdict
