"""When the report may claim a difference: one stated test over the repeats of two points, and Holm over the
report's comparisons.

A point's repeats are trials of the same parameters (other seeds). The test is the exact two-sided Wilcoxon
rank-sum (Mann-Whitney) test: under no difference every split of the pooled repeats into the two points is
equally likely, and p is the share of the C(n + m, n) splits whose rank sum lies at least as far from its mean
as the observed one. Tied values take their mean rank and the splits are counted over those ranks, so p is
exact with ties too. A difference is claimed when p <= ALPHA and the point said to be higher has the larger
rank sum. Three repeats each set wholly apart give p = 2 / C(6, 3) = 0.1, the smallest p at three each, which
is why MIN_REPEATS is 3; four each give 2 / 70, and a difference of a given size passes more often the more
repeats there are.

A report makes many comparisons. ``Family`` holds them and applies Holm's step-down procedure at ALPHA, so the
chance that any claimed difference in the report comes from chance alone is at most ALPHA; a difference that
passes its own test but not Holm's is marked as holding per comparison only.

Where the test does not claim, the finding says how many repeats per point would settle a difference of the
size seen: the smallest n at which this same test, run on n vs n repeats, claims the difference at least
``POWER`` of the time, by simulation of a normal model with the observed difference of the means and the
pooled standard deviation (seeded, so the advice is the same on every run), searched up to MAX_ADVISED.
"""

from __future__ import annotations

import math
from collections.abc import Iterable
from dataclasses import dataclass
from functools import cache, lru_cache
from itertools import count
from math import comb

import numpy as np

ALPHA = 0.1  # the level of each comparison, and the family-wise level Holm's procedure keeps the report at
POWER = 0.8  # the chance of a claim the advised repeats give a difference of the size seen
MAX_ADVISED = 30  # repeats per point beyond which the advice says only "more than this"
SIMULATIONS = 2000  # simulated experiments per repeat count: the power's standard error is about 0.01
SIMULATION_SEED = 0
# An exact share such as 2/20 must meet ALPHA = 0.1 however the division rounds.
P_TOLERANCE = 1e-9


def smallest_p(n: int, m: int) -> float:
    """The smallest p the test can give at n vs m distinct values: one point wholly beyond the other."""
    return 2 / comb(n + m, n) if n and m else 1.0


def passes(p: float) -> bool:
    return p <= ALPHA * (1 + P_TOLERANCE)


MIN_REPEATS = next(n for n in count(1) if passes(smallest_p(n, n)))  # fewest equal repeats that can pass
RULE = (
    f"a difference between two points is claimed when the exact two-sided Wilcoxon rank-sum (Mann–Whitney) test "
    f"of their repeats gives p ≤ {ALPHA:g} ({MIN_REPEATS} repeats of one wholly beyond {MIN_REPEATS} of the other "
    f"give p = {smallest_p(MIN_REPEATS, MIN_REPEATS):.2g}, the fewest equal repeats that can pass; "
    f"{MIN_REPEATS + 1} each: p = {smallest_p(MIN_REPEATS + 1, MIN_REPEATS + 1):.2g}); Holm's step-down procedure "
    f"over all the report's comparisons keeps the chance of any false claim at {ALPHA:g}, and a claim that passes "
    "its own test but not Holm's says so; otherwise a difference is not established"
)


def doubled_midranks(values: np.ndarray) -> np.ndarray:
    """Twice each value's rank among ``values`` (1-based; tied values share their mean rank): whole numbers."""
    _, inverse, counts = np.unique(values, return_inverse=True, return_counts=True)
    starts = np.cumsum(counts) - counts  # the 0-based position of each distinct value's first copy
    return (2 * starts + counts + 1)[inverse]


@lru_cache(maxsize=512)
def p_by_total(size: int, ranks: tuple[int, ...]) -> np.ndarray:
    """p of every possible total of ``size`` of the doubled ``ranks`` (index: the total).

    The null distribution counts the subsets of ``size`` ranks by their total, one rank at a time (a 0/1
    knapsack over counts); p of a total is the share of subsets at least as far from the mean total.
    Without ties the ranks depend only on the two counts, so each (n, m) is counted once per process.
    """
    top = sum(sorted(ranks)[len(ranks) - size :])
    ways = np.zeros((size + 1, top + 1))
    ways[0, 0] = 1
    for rank in ranks:
        ways[1:, rank:] += ways[:-1, : top + 1 - rank].copy()
    null = ways[size]
    distance = np.abs(np.arange(top + 1) - size * (len(ranks) + 1))  # doubled mean total: size (N + 1)
    at_least = np.bincount(distance, weights=null)[::-1].cumsum()[::-1]
    return at_least[distance] / null.sum()


def rank_sum_test(higher: tuple[float, ...], lower: tuple[float, ...]) -> tuple[float, bool]:
    """The exact two-sided p, and whether ``higher`` has the larger rank sum (more than its mean)."""
    ranks = doubled_midranks(np.array(higher + lower))
    n, pooled = len(higher), len(ranks)
    high_total = int(ranks[:n].sum())
    # The smaller side's total carries the same test with the shorter count.
    size, total = (n, high_total) if n <= pooled - n else (pooled - n, int(ranks[n:].sum()))
    p = float(p_by_total(size, tuple(sorted(int(r) for r in ranks)))[total])
    return p, high_total > n * (pooled + 1)


@lru_cache(maxsize=1)
def standard_draws() -> tuple[np.ndarray, np.ndarray]:
    """The simulated repeats of two points, shared by every effect size and count (seeded)."""
    rng = np.random.default_rng(SIMULATION_SEED)
    return rng.standard_normal((SIMULATIONS, MAX_ADVISED)), rng.standard_normal((SIMULATIONS, MAX_ADVISED))


@cache
def claims_by_total(n: int) -> np.ndarray:
    """Whether the test claims the first of n vs n distinct values higher, per doubled rank total of the first."""
    p = p_by_total(n, tuple(range(2, 4 * n + 1, 2)))
    return np.array([passes(v) for v in p]) & (np.arange(len(p)) > n * (2 * n + 1))


def power(effect: float, n: int) -> float:
    """The share of simulated n vs n experiments, normal with means ``effect`` standard deviations apart, that
    the test claims the higher point higher."""
    high, low = standard_draws()
    pooled = np.concatenate([high[:, :n] + effect, low[:, :n]], axis=1)
    ranks = pooled.argsort(axis=1).argsort(axis=1) + 1
    return float(claims_by_total(n)[2 * ranks[:, :n].sum(axis=1)].mean())


@lru_cache(maxsize=1024)
def repeats_for(effect: float) -> int:
    """The fewest repeats per point at which the test claims a difference of ``effect`` standard deviations
    with probability POWER; MAX_ADVISED + 1 where even MAX_ADVISED do not."""
    if power(effect, MAX_ADVISED) < POWER:
        return MAX_ADVISED + 1
    return next(n for n in range(MIN_REPEATS, MAX_ADVISED + 1) if power(effect, n) >= POWER)


def repeats_needed(higher: tuple[float, ...], lower: tuple[float, ...]) -> int | None:
    """Repeats per point at which the test would claim a difference this size (of the means, in pooled standard
    deviations) with probability POWER; above MAX_ADVISED: more than that. None where ``higher`` is not
    above ``lower`` on average: there is no difference in that direction to settle."""
    difference = float(np.mean(higher)) - float(np.mean(lower))
    if not difference > 0:
        return None
    freedom = sum(len(x) - 1 for x in (higher, lower) if len(x) >= 2)
    if not freedom:
        return MIN_REPEATS  # one run each: the spread is unknown, so the first thing to get is the test's minimum
    sd = math.sqrt(sum(float(np.var(x)) * len(x) for x in (higher, lower) if len(x) >= 2) / freedom)
    if sd == 0:
        return MIN_REPEATS  # no spread at all: the fewest repeats that can pass settle it
    return repeats_for(float(f"{difference / sd:.2g}"))  # two digits of the effect: the advice is "about"


@dataclass(frozen=True)
class Verdict:
    """Whether ``higher`` is established above ``lower``, from their repeats."""

    established: bool
    higher: tuple[float, ...]
    lower: tuple[float, ...]
    p: float  # the exact two-sided rank-sum p; 1 where a point has no values

    @property
    def repeats(self) -> int:
        return min(len(self.higher), len(self.lower))

    @property
    def needed(self) -> int | None:
        """Repeats per point that would settle a difference this size; None once established or with none seen."""
        if self.established or not self.higher or not self.lower:
            return None
        return repeats_needed(self.higher, self.lower)

    def sentence(self, family: Family | None = None) -> str:
        """``established (3 vs 3 repeat(s), p = 0.1)`` or ``not established (...)``; with the report's
        ``family``, an established difference that does not pass Holm's procedure is marked so."""
        counts = f"{len(self.higher)} vs {len(self.lower)} repeat(s)"
        if self.established:
            text = f"established ({counts}, p = {self.p:.2g})"
            if family is not None and not family.holds(self):
                text += f" (per comparison only; not after Holm over {family.size} comparisons)"
            return text
        floor = smallest_p(len(self.higher), len(self.lower))
        if not passes(floor):
            reason = f"too few to reach p ≤ {ALPHA:g}: the smallest p at these counts is {floor:.2g}"
        elif passes(self.p):
            reason = f"p = {self.p:.2g}, but the difference runs the other way"
        else:
            reason = f"p = {self.p:.2g} > {ALPHA:g}"
        return f"not established ({counts}, {reason}{self.advice()})"

    def advice(self) -> str:
        needed = self.needed
        if needed is None:
            return "; the repeats show no difference in this direction to settle"
        if needed > MAX_ADVISED:
            return (
                f"; more than {MAX_ADVISED} repeats per point would be needed to settle it: the difference is "
                "small against the spread"
            )
        return f"; about {needed} repeats per point would settle it (--repeats {needed})"


def compare(higher, lower) -> Verdict:
    """The test applied to the repeats of the point said to be higher and the one said to be lower (NaNs
    dropped)."""
    high = tuple(float(v) for v in higher if v is not None and not math.isnan(float(v)))
    low = tuple(float(v) for v in lower if v is not None and not math.isnan(float(v)))
    if not high or not low:
        return Verdict(False, high, low, 1.0)
    p, above = rank_sum_test(high, low)
    return Verdict(passes(p) and above, high, low, p)


def differ(a, b) -> Verdict:
    """The test in whichever direction the medians point: the point with the higher median is the higher."""
    a, b = list(a), list(b)
    return compare(a, b) if np.nanmedian(a) >= np.nanmedian(b) else compare(b, a)


def holm(p_values: list[float], alpha: float = ALPHA) -> list[bool]:
    """Holm's step-down procedure: which hypotheses are rejected with a family-wise error rate of ``alpha``.

    The i-th smallest p (from 0) is compared with alpha / (k - i); every p below the first that fails is
    rejected, none from it on.
    """
    rejected = [False] * len(p_values)
    order = sorted(range(len(p_values)), key=lambda i: p_values[i])
    for step, index in enumerate(order):
        if p_values[index] > alpha / (len(p_values) - step) * (1 + P_TOLERANCE):
            break
        rejected[index] = True
    return rejected


class Family:
    """The comparisons one report makes (each pair of points once), with Holm's procedure over them at ALPHA."""

    def __init__(self, verdicts: Iterable[Verdict]):
        unique = {(v.higher, v.lower): v for v in verdicts if v.higher and v.lower}
        self.verdicts = list(unique.values())
        rejected = holm([v.p for v in self.verdicts])
        self._after_holm = {key: v.established and r for (key, v), r in zip(unique.items(), rejected)}

    @property
    def size(self) -> int:
        return len(self.verdicts)

    def holds(self, verdict: Verdict) -> bool:
        """Whether an established difference also passes Holm's procedure over the family."""
        key = (verdict.higher, verdict.lower)
        if key not in self._after_holm:
            raise KeyError(f"a comparison the report states is not in its family: {verdict}")
        return self._after_holm[key]

    def sentence(self) -> str:
        """How many comparisons the report makes, how many pass their own test and how many Holm's procedure."""
        claimed = sum(v.established for v in self.verdicts)
        held = sum(self._after_holm.values())
        return (
            f"{self.size} comparison(s) in this report; {claimed} difference(s) established per comparison, "
            f"{held} after Holm's procedure over the {self.size} (family-wise level {ALPHA:g})"
        )
