"""The rule behind every claimed difference, on known answers: disjoint ranges over enough repeats, and the
repeats per point that would settle a difference that does not pass it."""

from __future__ import annotations

import math

import pytest

from analysis.evidence import MIN_REPEATS, RULE, compare, differ, repeats_needed


def test_every_repeat_above_every_other_with_three_each_is_established():
    verdict = compare([10.0, 11.0, 12.0], [7.0, 8.0, 9.5])
    assert verdict.established and verdict.needed is None
    assert verdict.sentence() == "established (3 vs 3 repeat(s), ranges disjoint)"


def test_overlapping_ranges_are_not_established_and_say_how_many_repeats_would_settle_it():
    # means 3 and 2, both standard deviations 1: n = 2 (1.959964 + 0.841621)^2 (1 / 1)^2 = 15.70 -> 16
    verdict = compare([2.0, 3.0, 4.0], [1.0, 2.0, 3.0])
    assert not verdict.established and verdict.needed == 16
    assert verdict.sentence() == (
        "not established (3 vs 3 repeat(s), ranges overlap; about 16 repeats per point would settle it (--repeats 16))"
    )


def test_disjoint_ranges_from_too_few_repeats_are_not_established():
    verdict = compare([10.0, 10.2], [5.0, 5.1])
    assert not verdict.established
    assert "ranges disjoint but fewer than 3 repeats" in verdict.sentence()
    assert f"--repeats {MIN_REPEATS}" in verdict.sentence()  # a large difference: the rule's minimum settles it


def test_single_runs_ask_for_the_rules_minimum():
    assert repeats_needed((2.0,), (1.0,)) == MIN_REPEATS
    assert not compare([2.0], [1.0]).established


def test_equal_means_have_no_difference_to_settle():
    verdict = compare([1.0, 2.0, 3.0], [3.0, 2.0, 1.0])
    assert verdict.needed is None and verdict.sentence().endswith("the repeats show no difference to settle)")


def test_the_sample_size_is_the_two_sided_five_percent_eighty_percent_power_formula():
    a, b = (10.0, 12.0, 14.0, 16.0), (9.0, 11.0, 13.0, 15.0)  # d = 1, s = sqrt(20/3)
    expected = math.ceil(2 * (1.959964 + 0.841621) ** 2 * (20 / 3) / 1**2)
    assert repeats_needed(a, b) == expected == 105


def test_missing_values_are_dropped_before_the_rule():
    verdict = compare([10.0, float("nan"), 11.0, 12.0], [1.0, 2.0, None, 3.0])
    assert verdict.established and verdict.higher == (10.0, 11.0, 12.0) and verdict.lower == (1.0, 2.0, 3.0)


def test_differ_tests_the_point_with_the_higher_median_as_the_higher():
    verdict = differ([1.0, 2.0, 3.0], [7.0, 8.0, 9.0])
    assert verdict.established and verdict.higher == (7.0, 8.0, 9.0)


def test_the_stated_rule_gives_the_chance_of_disjoint_ranges_under_no_difference():
    # 2 of the C(6, 3) = 20 equally likely orderings of 3 + 3 values put one set wholly above the other
    assert "1 time in 10 at 3 repeats" in RULE and f"at least {MIN_REPEATS} repeats each" in RULE


@pytest.mark.parametrize("repeats", [3, 4])
def test_disjoint_ranges_are_as_rare_by_chance_as_the_rule_says(repeats):
    """Every split of 2n distinct values into two groups of n: the share with disjoint ranges is 2 / C(2n, n)."""
    from itertools import combinations

    values = range(2 * repeats)
    disjoint = sum(
        1
        for group in combinations(values, repeats)
        if min(group) > max(set(values) - set(group)) or max(group) < min(set(values) - set(group))
    )
    assert disjoint / math.comb(2 * repeats, repeats) == pytest.approx(2 / math.comb(2 * repeats, repeats))
