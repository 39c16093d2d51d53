"""The rule behind every claimed difference, on known answers: the exact two-sided rank-sum test at ALPHA, its
false-claim rate and power over simulated repeats, the repeats per point that would settle a difference it does
not claim, and Holm's procedure over a report's comparisons."""

from __future__ import annotations

import math
from itertools import combinations

import numpy as np
import pytest

from analysis.rows.evidence import (
    ALPHA,
    MAX_ADVISED,
    MIN_REPEATS,
    RULE,
    Family,
    compare,
    differ,
    holm,
    rank_sum_test,
    repeats_for,
    repeats_needed,
    smallest_p,
    standard_draws,
)

# Three standard errors of a share near ALPHA over SAMPLES simulated pairs: the margin of a rate check.
SAMPLES = 2000
MARGIN = 3 * math.sqrt(ALPHA * (1 - ALPHA) / SAMPLES)


def brute_force_p(higher: list[float], lower: list[float]) -> float:
    """Every split of the pooled values into the two counts, by the mean-rank sum of the first: the share at
    least as far from its mean as the observed split's (the definition, with nothing cached)."""
    pooled = higher + lower
    ranks = [sum(v > w for w in pooled) + (sum(v == w for w in pooled) + 1) / 2 for v in pooled]
    mean = len(higher) * (len(pooled) + 1) / 2
    observed = abs(sum(ranks[: len(higher)]) - mean)
    splits = list(combinations(range(len(pooled)), len(higher)))
    return sum(abs(sum(ranks[i] for i in split) - mean) >= observed - 1e-9 for split in splits) / len(splits)


def test_three_repeats_wholly_above_three_give_p_one_tenth_and_are_established():
    # 2 of the C(6, 3) = 20 equally likely splits put one point wholly beyond the other: p = 0.1 <= ALPHA
    verdict = compare([10.0, 11.0, 12.0], [7.0, 8.0, 9.5])
    assert verdict.p == pytest.approx(2 / 20) and verdict.established and verdict.needed is None
    assert verdict.sentence() == "established (3 vs 3 repeat(s), p = 0.1)"


def test_four_repeats_wholly_apart_give_two_in_seventy():
    verdict = compare([5.0, 6.0, 7.0, 8.0], [1.0, 2.0, 3.0, 4.0])
    assert verdict.p == pytest.approx(2 / 70) and verdict.established
    assert verdict.sentence() == "established (4 vs 4 repeat(s), p = 0.029)"


def test_ties_take_their_mean_rank_and_are_counted_exactly():
    # pooled 1 1 2 2 3 3 -> mean ranks 1.5 1.5 3.5 3.5 5.5 5.5; (2, 3, 3) sums 14.5, 4 above the mean 10.5;
    # 2 splits reach 14.5 (both 5.5s and either 3.5) and 2 reach 6.5: p = 4 / 20
    p, above = rank_sum_test((2.0, 3.0, 3.0), (1.0, 1.0, 2.0))
    assert p == pytest.approx(0.2) and above
    assert not compare([2.0, 3.0, 3.0], [1.0, 1.0, 2.0]).established
    assert compare([4.0, 4.0, 4.0], [4.0, 4.0, 4.0]).p == pytest.approx(1.0)  # all tied: nothing to see


@pytest.mark.parametrize("seed", range(20))
def test_p_equals_the_enumerated_permutation_share_with_and_without_ties(seed):
    rng = np.random.default_rng(seed)
    n, m = int(rng.integers(1, 6)), int(rng.integers(1, 6))
    # whole numbers from a short range: ties in most draws
    higher, lower = rng.integers(0, 5, n).astype(float).tolist(), rng.integers(0, 5, m).astype(float).tolist()
    assert rank_sum_test(tuple(higher), tuple(lower))[0] == pytest.approx(brute_force_p(higher, lower))


def test_without_ties_p_is_scipys_exact_mann_whitney():
    stats = pytest.importorskip("scipy.stats")
    rng = np.random.default_rng(3)
    for n, m in ((3, 3), (4, 6), (10, 10), (7, 12), (15, 15)):
        x, y = rng.normal(size=n) + 1, rng.normal(size=m)
        expected = stats.mannwhitneyu(x, y, alternative="two-sided", method="exact").pvalue
        assert rank_sum_test(tuple(x), tuple(y))[0] == pytest.approx(expected)


def test_too_few_repeats_to_reach_the_level_say_so_and_ask_for_the_minimum():
    assert MIN_REPEATS == 3 and smallest_p(2, 2) == pytest.approx(1 / 3) and smallest_p(3, 3) == pytest.approx(0.1)
    verdict = compare([10.0, 10.2], [5.0, 5.1])
    assert not verdict.established
    assert verdict.sentence().startswith(
        "not established (2 vs 2 repeat(s), too few to reach p ≤ 0.1: the smallest p at these counts is 0.33"
    )
    assert f"--repeats {MIN_REPEATS}" in verdict.sentence()  # a large difference: the test's minimum settles it
    assert not compare([2.0], [1.0]).established and repeats_needed((2.0,), (1.0,)) == MIN_REPEATS


def test_unequal_counts_can_pass_where_the_splits_allow():
    # 2 vs 5 wholly apart: 2 of C(7, 2) = 21 splits, p = 0.095 <= 0.1
    assert compare([10.0, 11.0], [1.0, 2.0, 3.0, 4.0, 5.0]).established


def test_a_difference_the_other_way_is_not_established_in_the_stated_direction():
    verdict = compare([1.0, 2.0, 3.0], [7.0, 8.0, 9.0])
    assert verdict.p == pytest.approx(0.1) and not verdict.established and verdict.needed is None
    assert verdict.sentence() == (
        "not established (3 vs 3 repeat(s), p = 0.1, but the difference runs the other way; "
        "the repeats show no difference in this direction to settle)"
    )


def test_equal_means_have_no_difference_to_settle():
    verdict = compare([1.0, 2.0, 3.0], [3.0, 2.0, 1.0])
    assert verdict.needed is None and verdict.sentence().endswith("no difference in this direction to settle)")


def test_missing_values_are_dropped_before_the_test():
    verdict = compare([10.0, float("nan"), 11.0, 12.0], [1.0, 2.0, None, 3.0])
    assert verdict.established and verdict.higher == (10.0, 11.0, 12.0) and verdict.lower == (1.0, 2.0, 3.0)


def test_differ_tests_the_point_with_the_higher_median_as_the_higher():
    verdict = differ([1.0, 2.0, 3.0], [7.0, 8.0, 9.0])
    assert verdict.established and verdict.higher == (7.0, 8.0, 9.0)


@pytest.mark.parametrize("repeats", [3, 5, 10])
def test_with_no_difference_a_difference_is_claimed_at_most_at_the_stated_rate(repeats):
    rng = np.random.default_rng(repeats)
    claims = sum(differ(rng.normal(size=repeats), rng.normal(size=repeats)).established for _ in range(SAMPLES))
    assert claims / SAMPLES <= ALPHA + MARGIN


def test_a_two_sd_difference_is_claimed_at_least_four_times_in_five_at_ten_repeats():
    rng = np.random.default_rng(11)
    claims = sum(compare(rng.normal(size=10) + 2, rng.normal(size=10)).established for _ in range(SAMPLES))
    assert claims / SAMPLES >= 0.8


@pytest.mark.parametrize("effect", [0.7, 1.0, 1.5, 2.0])
def test_the_advised_repeats_give_the_test_four_in_five_and_one_fewer_does_not(effect):
    """Fresh draws (not the advice's own): at the advised n the test claims the effect about 80% of the time."""
    rng = np.random.default_rng(21)
    n = repeats_for(effect)

    def share(k: int) -> float:
        return np.mean([compare(rng.normal(size=k) + effect, rng.normal(size=k)).established for _ in range(SAMPLES)])

    assert share(n) >= 0.8 - 3 * math.sqrt(0.16 / SAMPLES)
    if n > MIN_REPEATS:
        assert share(n - 1) < 0.8 + 3 * math.sqrt(0.16 / SAMPLES)


def test_following_the_advice_from_three_repeats_gives_at_least_even_odds_of_settling_it():
    """Pilot 3 vs 3 experiments of a 1-sd difference that the test does not claim; each advises n; a fresh
    n vs n experiment of the same difference then claims it at least half the time."""
    rng = np.random.default_rng(5)
    settled = followed = 0
    while followed < 300:
        verdict = compare(rng.normal(size=3) + 1, rng.normal(size=3))
        if verdict.established or verdict.needed is None or verdict.needed > MAX_ADVISED:
            continue
        followed += 1
        settled += compare(rng.normal(size=verdict.needed) + 1, rng.normal(size=verdict.needed)).established
    assert settled / followed >= 0.5


def test_the_advice_is_the_same_on_every_run():
    a, b = (2.0, 3.0, 4.0), (1.0, 2.0, 3.0)  # means 1 apart, pooled sd 1
    first = repeats_needed(a, b)
    repeats_for.cache_clear()
    standard_draws.cache_clear()
    assert repeats_needed(a, b) == first == repeats_for(1.0)


def test_a_difference_small_against_the_spread_says_more_than_the_cap():
    verdict = compare([1.0, 2.0, 3.1], [1.0, 2.0, 3.0])
    assert verdict.needed > MAX_ADVISED
    assert verdict.sentence().endswith(
        f"more than {MAX_ADVISED} repeats per point would be needed to settle it: the difference is small against "
        "the spread)"
    )


def test_an_advised_count_is_written_as_the_flag_that_runs_it():
    verdict = compare([2.0, 3.0, 4.0], [1.0, 2.0, 3.0])
    n = verdict.needed
    assert MIN_REPEATS <= n <= MAX_ADVISED
    assert verdict.sentence() == (
        f"not established (3 vs 3 repeat(s), p = 0.5 > 0.1; about {n} repeats per point would settle it "
        f"(--repeats {n}))"
    )


def test_no_spread_and_a_difference_ask_for_the_fewest_repeats_that_can_pass():
    assert repeats_needed((2.0, 2.0), (1.0, 1.0)) == MIN_REPEATS


def test_holm_rejects_as_in_the_textbook_example():
    # Holm (1979) as usually worked: p = 0.01, 0.04, 0.03, 0.005 at 0.05. Sorted: 0.005 <= 0.05/4 and
    # 0.01 <= 0.05/3 are rejected; 0.03 > 0.05/2 stops it, so 0.04 is kept although 0.04 < 0.05.
    assert holm([0.01, 0.04, 0.03, 0.005], alpha=0.05) == [True, False, False, True]
    assert holm([], alpha=0.05) == []


def test_a_family_marks_a_claim_that_holds_per_comparison_only():
    strong = compare([5.0, 6.0, 7.0, 8.0, 9.0], [0.0, 1.0, 2.0, 3.0, 4.0])  # p = 2/252: passes 0.1/3
    weak = compare([10.0, 11.0, 12.0], [7.0, 8.0, 9.5])  # p = 0.1: fails 0.1/2 at the second step
    none = compare([1.0, 2.0, 3.0], [3.0, 2.0, 1.0])
    family = Family([strong, weak, none, weak])  # one pair of points counts once
    assert family.size == 3
    assert family.holds(strong) and not family.holds(weak) and not family.holds(none)
    assert strong.sentence(family) == "established (5 vs 5 repeat(s), p = 0.0079)"
    assert weak.sentence(family) == (
        "established (3 vs 3 repeat(s), p = 0.1) (per comparison only; not after Holm over 3 comparisons)"
    )
    assert family.sentence() == (
        "3 comparison(s) in this report; 2 difference(s) established per comparison, 1 after Holm's procedure "
        "over the 3 (family-wise level 0.1)"
    )
    with pytest.raises(KeyError, match="not in its family"):
        family.holds(compare([20.0, 21.0, 22.0], [1.0, 2.0, 3.0]))


def test_the_stated_rule_names_the_test_the_level_and_holm():
    assert "exact two-sided Wilcoxon rank-sum (Mann–Whitney) test" in RULE and "p ≤ 0.1" in RULE
    assert "give p = 0.1, the fewest equal repeats that can pass; 4 each: p = 0.029" in RULE
    assert "Holm's step-down procedure" in RULE
