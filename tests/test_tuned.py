"""Accuracy vs batch size with a tuned learning rate: known answers on small hand-built trial frames."""

from __future__ import annotations

import math

import pandas as pd
import pytest

from analysis.metrics.tuned import decline, explanation, supported, tuned_analysis
from analysis.rows.evidence import Family
from raysweep.core.params import rule_learning_rate

RULE_16, RULE_256 = rule_learning_rate("adamw", 16), rule_learning_rate("adamw", 256)


def row(batch: int, repeat: int, lr: float, accuracy: float | None, warmup: float = 0.05) -> dict:
    return {
        "trial_id": f"b{batch}-r{repeat}-{lr:.3g}-{warmup}",
        "model": "vit_micro_patch4_32",
        "optimizer": "adamw",
        "num_workers": 1,
        "micro_batch_per_worker": batch,
        "global_batch": batch,
        "grad_accum_steps": 1,
        "samples_per_epoch": 1408,
        "lr": lr,
        "lr_warmup": warmup,
        "repeat": repeat,
        "seed": repeat,
        "val_accuracy": float("nan") if accuracy is None else accuracy,  # None: stopped by the scheduler
        "throughput_per_worker": 1000.0,
    }


def sweep(tuned: dict[int, list[float]], rule: dict[int, list[float]]) -> pd.DataFrame:
    """Per batch size, the tuned best and the rule's accuracy of each repeat's study; each study also has a
    trial the scheduler stopped (no final accuracy) and a worse searched one."""
    rows = []
    for batch, bests in tuned.items():
        base = rule_learning_rate("adamw", batch)
        for repeat, best in enumerate(bests):
            rows += [
                row(batch, repeat, base, rule[batch][repeat]),
                row(batch, repeat, base * 3, best, warmup=0.2),
                row(batch, repeat, base / 5, min(best, rule[batch][repeat]) - 0.1, warmup=0.1),
                row(batch, repeat, base * 8, None, warmup=0.25),
            ]
    return pd.DataFrame(rows)


RULE = {16: [0.95, 0.96, 0.97], 64: [0.90, 0.91, 0.92], 256: [0.75, 0.77, 0.79]}


def test_a_decline_that_survives_tuning_is_established_with_three_repeats_each():
    (result,) = tuned_analysis(sweep({16: [0.96, 0.97, 0.98], 64: [0.95, 0.96, 0.96], 256: [0.85, 0.86, 0.88]}, RULE))
    assert result.tuned.values[256] == (0.85, 0.86, 0.88) and result.rule.values[256] == (0.75, 0.77, 0.79)
    found = decline(result.tuned)
    assert (found.peak, found.largest, found.verdict.established) == (16, 256, True)
    text = result.finding()
    assert "the decline at large batch survives tuning" in text
    assert "0.110 lower at micro batch 256 than at 16" in text  # medians 0.97 and 0.86
    assert "established (3 vs 3 repeat(s), p = 0.1)" in text
    assert "at least the scaling rule's at every batch size" in text
    assert result.answer() == (
        "With the learning rate tuned per batch size, validation accuracy at micro batch 256 is 0.860 against "
        "0.970 at 16; that the decline at large batch survives tuning is established (3 vs 3 repeat(s), p = 0.1)."
    )
    # In the report the tuned and the rule's declines are two comparisons: at p = 0.1 each, Holm's procedure
    # over the two (0.1 > 0.1 / 2) keeps neither.
    family = Family(result.verdicts())
    assert family.size == 2
    assert "established (3 vs 3 repeat(s), p = 0.1) (per comparison only; not after Holm over 2 comparisons)" in (
        result.finding(family)
    )
    points = result.tuned.points().set_index("micro_batch_per_worker")
    assert points.loc[256].tolist() == [0.86, 0.85, 0.88, 3]


def test_a_decline_that_tuning_removes_is_not_established_and_says_the_repeats_needed():
    (result,) = tuned_analysis(sweep({16: [0.96, 0.97, 0.98], 64: [0.95, 0.96, 0.96], 256: [0.95, 0.965, 0.975]}, RULE))
    verdict = decline(result.tuned).verdict
    assert not verdict.established
    text = result.finding()
    assert "whether the decline at large batch survives tuning is not established" in text
    # means 0.970 and 0.963 over a pooled sd of 0.011: more repeats than the advice goes to
    assert "p = 0.7 > 0.1; more than 30 repeats per point would be needed to settle it" in text
    # the rule's own decline is established: tuning is what removed it
    assert "With the scaling rule's learning rate: 0.190 lower at micro batch 256 than at 16" in text
    assert decline(result.rule).verdict.established


def test_no_decline_when_the_largest_batch_is_best_once_tuned():
    (result,) = tuned_analysis(sweep({16: [0.96, 0.97, 0.98], 64: [0.95, 0.96, 0.96], 256: [0.98, 0.985, 0.99]}, RULE))
    assert decline(result.tuned).verdict is None
    assert "no decline: accuracy is highest at the largest micro batch, 256" in result.finding()


def test_too_few_repeats_to_reach_the_level_are_not_established_even_wholly_apart():
    two = {b: v[:2] for b, v in RULE.items()}
    (result,) = tuned_analysis(sweep({16: [0.96, 0.97], 64: [0.95, 0.96], 256: [0.85, 0.86]}, two))
    text = result.finding()
    assert "not established (2 vs 2 repeat(s), too few to reach p ≤ 0.1: the smallest p at these counts is 0.33" in text


def test_the_finding_says_where_and_by_how_much_the_tuned_best_is_below_the_rule():
    """At batch 64 the scheduler stopped the rule's trial in two of three studies, whose searched bests are
    poor: the tuned median (0.80) falls 0.12 below the one rule trial that completed (0.92)."""
    frame = sweep({16: [0.96, 0.97, 0.98], 64: [0.80, 0.80, 0.96], 256: [0.85, 0.86, 0.88]}, RULE)
    rule_64 = (frame["micro_batch_per_worker"] == 64) & (frame["lr_warmup"] == 0.05) & (frame["repeat"] < 2)
    frame.loc[rule_64, "val_accuracy"] = float("nan")
    (result,) = tuned_analysis(frame)
    assert result.rule.values[64] == (0.92,) and result.tuned.values[64] == (0.80, 0.80, 0.96)
    assert result.shortfalls() == {64: pytest.approx(0.12)}
    assert "The tuned best is below the scaling rule's at micro batch 64 by 0.120." in result.finding()


def test_only_a_sweep_that_searched_the_learning_rate_has_a_tuned_result():
    frame = pd.DataFrame([row(b, r, rule_learning_rate("adamw", b), 0.9) for b in (16, 256) for r in range(3)])
    assert tuned_analysis(frame) == []  # batch_grid: one learning rate per batch size, the rule's
    assert math.isclose(RULE_256 / RULE_16, 4.0)  # the square-root rule: 16x the batch, 4x the rate


def test_a_stopped_trials_early_accuracy_is_never_the_best():
    frame = sweep({16: [0.9, 0.9, 0.9], 256: [0.8, 0.8, 0.8]}, {16: [0.85] * 3, 256: [0.7] * 3})
    (result,) = tuned_analysis(frame)
    assert set(result.best["lr_warmup"]) == {0.2}  # the searched best, never the stopped 0.25


def write_sweep(root, frame: pd.DataFrame):
    """``frame``'s trials as a sweep directory (a stopped trial: status stopped, one epoch)."""
    from raysweep.core.store import ResultStore

    store = ResultStore(root, "tuned")
    for trial in frame.to_dict("records"):
        stopped = pd.isna(trial["val_accuracy"])
        params = {k: trial[k] for k in ("model", "optimizer", "micro_batch_per_worker", "lr_warmup", "seed")}
        params["lr"] = trial.pop("lr_param", trial["lr"])  # 0: the rule's, as a space without an lr axis says
        store.write_rows(
            "trials",
            trial["trial_id"],
            [
                {
                    **{k: v for k, v in trial.items() if k != "trial_id"},
                    "val_accuracy": None if stopped else trial["val_accuracy"],
                    "status": "stopped" if stopped else "completed",
                    "epochs": 2,
                    "throughput": 1000.0,
                    "train_time_s": 2.8,
                    "timed_s": 2.8,
                    "timed_samples": 2816,
                    "params_json": pd.Series(params).to_json(),
                }
            ],
        )
        epochs = [0] if stopped else [0, 1]
        accuracy = 0.5 if stopped else trial["val_accuracy"]
        store.write_rows(
            "epochs", trial["trial_id"], [{"epoch": e, "elapsed_s": e + 1.0, "val_accuracy": accuracy} for e in epochs]
        )
    return store.root


def test_the_report_has_the_tuned_section_only_where_the_sweep_searched_the_learning_rate(tmp_path):
    from analysis import analyze

    heading = "## Accuracy vs batch size: scaling-rule and tuned learning rate"
    tuned = sweep({16: [0.96, 0.97, 0.98], 256: [0.85, 0.86, 0.88]}, RULE)
    text = analyze(write_sweep(tmp_path / "a", tuned)).read_text(encoding="utf-8")
    assert heading in text and "### Accuracy vs batch size, tuned learning rate (T1)" in text
    assert "### Accuracy vs batch size, scaling-rule learning rate (T1)" in text
    assert "the decline at large batch survives tuning is established" in text
    rule_only = tuned[(tuned["lr_warmup"] == 0.05)].assign(lr_param=0.0)  # batch_grid: the rule at every batch
    text = analyze(write_sweep(tmp_path / "b", rule_only)).read_text(encoding="utf-8")
    assert heading not in text and "Batch size" in text


def arm(frame: pd.DataFrame, epochs: int, steps_per_epoch: dict[int, int], cap: int) -> pd.DataFrame:
    """``frame``'s trials as one arm of tuned_batch: ``epochs`` of at most ``cap`` steps (0: no cap)."""
    steps = frame["micro_batch_per_worker"].map(lambda b: epochs * (min(steps_per_epoch[b], cap) or steps_per_epoch[b]))
    return frame.assign(epochs=epochs, optimizer_steps=steps, max_steps_per_epoch=cap)


SPE = {16: 89, 64: 22, 256: 5}  # optimizer steps an epoch of the digits' 1424 training samples takes
FALLING = {16: [0.96, 0.97, 0.98], 64: [0.95, 0.96, 0.96], 256: [0.85, 0.86, 0.88]}
LEVEL = {16: [0.60, 0.62, 0.64], 64: [0.61, 0.63, 0.66], 256: [0.62, 0.65, 0.63]}
LEVEL_RULE = {b: [v - 0.05 for v in values] for b, values in LEVEL.items()}


def test_a_fall_at_fixed_epochs_that_vanishes_at_equal_steps_is_put_down_to_too_few_steps():
    fixed = arm(sweep(FALLING, RULE), 5, SPE, 0)
    matched = arm(sweep(LEVEL, LEVEL_RULE), 5, SPE, 5)
    results = tuned_analysis(pd.concat([fixed, matched.assign(trial_id="m-" + matched["trial_id"])], ignore_index=True))
    assert sorted(r.step_matched for r in results) == [False, True]
    said = explanation(results)
    assert "fixed epochs (fixed epochs: 25 to 445 optimizer steps across the batch sizes)" in said
    assert "step-matched (step-matched: 25 to 25 optimizer steps across the batch sizes)" in said
    assert said.endswith("the data support too few steps at large batch, not the batch size itself.")
    assert supported(results).startswith("The fall at fixed epochs is not established at equal optimizer steps")


def test_a_fall_at_both_arms_is_put_down_to_the_batch_size_and_one_arm_alone_explains_nothing():
    fixed = arm(sweep(FALLING, RULE), 5, SPE, 0)
    matched = arm(sweep(FALLING, RULE), 5, SPE, 5)
    results = tuned_analysis(pd.concat([fixed, matched.assign(trial_id="m-" + matched["trial_id"])], ignore_index=True))
    assert explanation(results).endswith(
        "So the fall holds at equal optimizer steps: the data support a large-batch effect."
    )
    assert explanation(tuned_analysis(fixed)) is None
