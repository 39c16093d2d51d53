"""When the report may claim a difference: one stated rule over the repeats of two points.

A point's repeats are trials of the same parameters (other seeds). Two points differ when every repeat of
one lies beyond every repeat of the other and each has at least ``MIN_REPEATS`` of them: their ranges are
disjoint. Under no difference every ordering of the pooled values is equally likely, so with three repeats
each the ranges come out disjoint by chance 2 times in C(6, 3) = 20, p = 0.1 (four each: 2 in 70).

Where the rule does not hold, the finding says "not established" and how many repeats per point would
settle a difference of the size seen: n = 2 (z(0.975) + z(0.8))^2 (s / d)^2, the normal approximation of
a two-sided 5% test with 80% power, with d the difference of the means and s the pooled standard deviation.
"""

from __future__ import annotations

import math
from dataclasses import dataclass
from math import comb

import numpy as np

MIN_REPEATS = 3
RULE = (
    f"a difference between two points is claimed only when every repeat of one lies beyond every repeat of "
    f"the other, with at least {MIN_REPEATS} repeats each (disjoint ranges; by chance alone 1 time in "
    f"{comb(2 * MIN_REPEATS, MIN_REPEATS) // 2} at {MIN_REPEATS} repeats); otherwise it is not established"
)
Z_TWO_SIDED_5 = 1.959964
Z_POWER_80 = 0.841621


@dataclass(frozen=True)
class Verdict:
    """Whether ``higher`` is established above ``lower``, from their repeats."""

    established: bool
    higher: tuple[float, ...]
    lower: tuple[float, ...]
    needed: int | None  # repeats per point that would settle a difference this size; None: none is seen

    @property
    def repeats(self) -> int:
        return min(len(self.higher), len(self.lower))

    def sentence(self) -> str:
        """``established (3 vs 3 repeats, ranges disjoint)`` or ``not established (...)``."""
        counts = f"{len(self.higher)} vs {len(self.lower)} repeat(s)"
        if self.established:
            return f"established ({counts}, ranges disjoint)"
        if self.repeats < MIN_REPEATS and separated(self.higher, self.lower):
            reason = f"ranges disjoint but fewer than {MIN_REPEATS} repeats"
        else:
            reason = "ranges overlap"
        wanted = max(MIN_REPEATS, self.needed) if self.needed is not None else None
        settle = (
            f"; about {wanted} repeats per point would settle it (--repeats {wanted})"
            if wanted is not None
            else "; the repeats show no difference to settle"
        )
        return f"not established ({counts}, {reason}{settle})"


def separated(higher: tuple[float, ...], lower: tuple[float, ...]) -> bool:
    return bool(higher) and bool(lower) and min(higher) > max(lower)


def repeats_needed(a: tuple[float, ...], b: tuple[float, ...]) -> int | None:
    """Repeats per point for a two-sided 5% test with 80% power to see the difference of the means of a and b.

    None when the means are equal (no difference to see) or a point has no spread estimate and the ranges touch.
    """
    difference = abs(float(np.mean(a)) - float(np.mean(b)))
    if difference == 0:
        return None
    variances = [float(np.var(x, ddof=1)) for x in (a, b) if len(x) >= 2]
    if not variances:
        return MIN_REPEATS  # one run each: the spread is unknown, so the first thing to get is the rule's minimum
    sd = math.sqrt(float(np.mean(variances)))
    return max(2, math.ceil(2 * (Z_TWO_SIDED_5 + Z_POWER_80) ** 2 * (sd / difference) ** 2))


def compare(higher, lower) -> Verdict:
    """The rule applied to the repeats of the point said to be higher and the one said to be lower (NaNs dropped)."""
    high = tuple(float(v) for v in higher if v is not None and not math.isnan(float(v)))
    low = tuple(float(v) for v in lower if v is not None and not math.isnan(float(v)))
    established = len(high) >= MIN_REPEATS and len(low) >= MIN_REPEATS and separated(high, low)
    return Verdict(established, high, low, None if established or not high or not low else repeats_needed(high, low))


def differ(a, b) -> Verdict:
    """The rule in whichever direction the medians point: the point with the higher median is the higher."""
    a, b = list(a), list(b)
    return compare(a, b) if np.nanmedian(a) >= np.nanmedian(b) else compare(b, a)
