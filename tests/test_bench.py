"""The benchmark's arithmetic (setup_s against the cold-process floor, MFU) and the settings of its sweeps."""

from __future__ import annotations

from datetime import datetime, timezone

import pytest

from raysweep.bench.stack import (
    best_plain,
    compare,
    floor_lines,
    setup_against_floor,
    spread,
    stack_compile_mode,
    stack_overrides,
    utilisation,
    utilisation_lines,
)


def at(second: int) -> datetime:
    return datetime(2026, 12, 3, 0, 0, second, tzinfo=timezone.utc)


def test_the_first_trial_is_the_earliest_started_and_the_later_median_comes_from_the_economy():
    trials = [{"started_at": at(30), "setup_s": 6.0}, {"started_at": at(0), "setup_s": 20.0}]
    # launched 12 s before the first trial's start (a 100 s sweep, 112 s from launch): first step at 32 s
    economy = {"median_later_setup_s": 6.0, "wall_s": 100.0, "launch_wall_s": 112.0}
    against = setup_against_floor(trials, economy, {"floor_s": 14.0})
    assert against == {
        "floor_s": 14.0,
        "first_setup_s": 20.0,
        "median_later_setup_s": 6.0,
        "first_over_floor_s": 6.0,
        "later_over_floor_s": -8.0,
        "first_step_from_launch_s": 32.0,
        "first_from_launch_over_floor_s": 18.0,
    }


def test_a_sweep_of_one_trial_has_no_later_figure():
    against = setup_against_floor(
        [{"started_at": at(0), "setup_s": 16.0}], {"median_later_setup_s": None}, {"floor_s": 14.0}
    )
    assert against["later_over_floor_s"] is None and against["first_over_floor_s"] == 2.0
    floor = {"floor_s": 14.0, "first_process_floor_s": 29.5, "batch": 32, "since_launch_s": {"first step": 14.0}}
    lines = floor_lines({**floor, "command": "python -m x"}, against)
    assert "no later trial" in lines[-1] and "(+2.0)" in lines[-1]
    assert "14.0 s to the first step's end (the host's first such process, filling the caches: 29.5 s)" in lines[0]


def test_the_full_stack_runs_the_model_at_the_resolution_of_the_plain_loop():
    # batch_grid's own image_size is the embedded default's 8 px: a ViT-B/16 cannot take it, and a
    # ratio against a plain loop at another resolution would compare different work
    assert stack_overrides("vit_base_patch16_224", 7680)["image_size"] == 224
    assert stack_overrides("vit_micro_patch4_32", 256)["image_size"] == 32


def stack_trial(
    throughput: float,
    flops_per_sample: float | None,
    peak_flops: float | None,
    mfu: float | None,
    compile: bool = False,
) -> dict:
    timings = {"setup_s": 1.0, "teardown_s": 0.0, "trial_wall_s": 2.0, "warmup_s": 0.5}
    return {
        "throughput": throughput,
        "epoch_img_s": [throughput],
        "compiled": compile,
        "flops_per_sample": flops_per_sample,
        "peak_flops": peak_flops,
        "mfu": mfu,
        **timings,
    }


def test_the_bench_mfu_is_the_trials_mfu_column_and_the_ceiling_share_is_a_second_figure():
    # 1000 samples/s x 1 GFLOP = 1 TFLOP/s achieved: 0.25 of a 4 TFLOP/s spec peak (the trial's own column,
    # passed through), 0.5 of a measured 2 TFLOP/s matmul ceiling
    plain = {"batch": 64, "variant": "eager", **spread("plain_img_s", [1000.0])}
    rows = [
        compare(plain, [stack_trial(1000.0, 1e9, 4e12, 0.25)], plain),
        compare(plain, [stack_trial(2000.0, 1e9, 4e12, 0.5, compile=True)], plain),
    ]
    figures = utilisation(rows, ceiling_tflops=2.0)
    assert figures["mfu"] == {"64": 0.25, "64c": 0.5}
    assert figures["matmul_ceiling_share"] == {"64": 0.5, "64c": 1.0}
    lines = utilisation_lines(figures)
    assert "MFU (the trials' mfu column, over the spec peak of 4 TFLOP/s): 64: 25.0%, 64c: 50.0%" in lines
    assert "share of the measured bf16 matmul ceiling (2 TFLOP/s): 64: 50.0%, 64c: 100.0%" in lines


def test_on_a_cpu_there_is_no_mfu_and_no_ceiling():
    plain = {"batch": 16, "variant": "eager", **spread("plain_img_s", [100.0])}
    rows = [compare(plain, [stack_trial(90.0, 2e7, None, None)], plain)]
    figures = utilisation(rows, ceiling_tflops=None)
    assert figures["mfu"] == {"16": None} and figures["matmul_ceiling_share"] == {"16": None}
    assert utilisation_lines(figures)[1] == "MFU: no spec peak for this device (the trials' peak_flops is NULL)"


def test_the_best_hand_written_variant_is_the_highest_median_per_batch():
    plain = [
        {"batch": 64, "variant": "eager", "plain_img_s": 100.0},
        {"batch": 64, "variant": "default", "plain_img_s": 130.0},
        {"batch": 64, "variant": "reduce-overhead", "plain_img_s": 120.0},
        {"batch": 128, "variant": "eager", "plain_img_s": 200.0},
    ]
    assert {b: p["variant"] for b, p in best_plain(plain).items()} == {64: "default", 128: "eager"}


def test_the_stack_compiles_in_the_mode_that_won_the_most_batches():
    def plain(*winners):
        rows = [{"batch": b, "variant": "eager", "plain_img_s": 1.0} for b in range(len(winners))]
        return rows + [{"batch": b, "variant": v, "plain_img_s": 2.0} for b, v in enumerate(winners) if v]

    assert stack_compile_mode(plain("reduce-overhead", "default", "reduce-overhead")) == "reduce-overhead"
    assert stack_compile_mode(plain("default", None, None)) == "default"
    assert stack_compile_mode(plain(None, None)) == "default"  # eager won everywhere: torch.compile's default


def test_the_ratio_is_of_medians_over_every_trial_of_the_batch_and_its_range_pairs_the_extreme_windows():
    plain = {"batch": 64, "variant": "default", **spread("plain_img_s", [90.0, 100.0, 110.0])}
    eager = {"plain_img_s": 80.0}
    first = {**stack_trial(99.0, 1e9, 4e12, 0.25, compile=True), "epoch_img_s": [95.0, 99.0, 104.5]}
    later = {
        **stack_trial(60.0, 1e9, 4e12, 0.2, compile=True),
        "epoch_img_s": [58.0, 60.0, 61.0],
        "setup_s": 0.7,
        "warmup_s": 0.1,
    }
    row = compare(plain, [first], eager)
    assert row["ratio"] == pytest.approx(99.0 / 100.0)
    assert row["ratio_min"] == pytest.approx(95.0 / 110.0) and row["ratio_max"] == pytest.approx(104.5 / 90.0)
    assert row["eager_img_s"] == 80.0 and row["stack_img_s_min"] == 95.0
    # a slow later trial counts: its windows join the median (of six: 61.0 and 95.0), and stands apart
    row = compare(plain, [first, later], eager)
    assert row["stack_img_s"] == pytest.approx((61.0 + 95.0) / 2) and row["stack_img_s_min"] == 58.0
    assert row["first_img_s"] == 99.0 and row["later_img_s"] == [60.0]
    assert row["setup_s"] == 0.7 and row["mfu"] == 0.2  # the last trial's
    # the warm-up of both: the batch's first compile of its shape, and the last trial's, which finds the caches
    assert (row["first_warmup_s"], row["stack_warmup_s"]) == (0.5, 0.1)
