"""compile=auto: a trial compiles where its planned steps save more than the compile costs, known answers."""

from __future__ import annotations

import dataclasses
from pathlib import Path

import pytest

from raysweep.core.compile_decision import (
    DEFAULT_COSTS,
    CompileCost,
    decide_compile,
    default_cost,
    measured_cost,
)
from raysweep.core.errors import UsageError
from raysweep.core.params import TrialParams

# 10 s to compile, 2x faster after, 1 ms per sample eager: a step of 100 samples saves 50 ms,
# so 200 steps save exactly the 10 s and 201 steps are the first that pay.
COST = CompileCost(compile_s=10.0, speedup=2.0, sample_s=1e-3, source="test figures")


def gpu(**values) -> TrialParams:
    return TrialParams.from_dict({"device": "gpu", "compile": "auto", "micro_batch_per_worker": 100, **values})


def test_the_saving_is_steps_times_step_time_times_one_less_the_inverse_speedup():
    assert COST.saving_s(steps=200, samples_per_step=100) == pytest.approx(10.0)
    assert CompileCost(5.0, 1.25, 2e-3, "x").saving_s(1000, 50) == pytest.approx(1000 * 0.1 * 0.2)


def test_a_short_gpu_trial_stays_eager_and_says_what_it_would_have_saved():
    decision = decide_compile(gpu(), planned_steps=200, measured=COST)
    assert not decision.compiled
    assert decision.reason == ("auto: eager, 200 steps save ~10.0 s at 2.00x against a 10.0 s compile (test figures)")


def test_a_long_gpu_trial_compiles_in_the_default_mode_above_micro_batch_64():
    decision = decide_compile(gpu(), planned_steps=201, measured=COST)
    assert decision.compiled and decision.mode == "default"
    assert decision.reason.startswith("auto: compiled, 201 steps save ~10.1 s")
    params = decision.applied(gpu())
    assert (params.compile, params.compile_mode) == ("true", "default")


def test_a_compiled_small_batch_takes_cuda_graphs_and_says_why():
    decision = decide_compile(gpu(micro_batch_per_worker=64), planned_steps=1000, measured=COST)
    assert decision.compiled and decision.mode == "reduce-overhead"
    assert "reduce-overhead (CUDA graphs: micro batch 64 <= 64 is launch-bound)" in decision.reason
    # a mode the user set is kept
    kept = decide_compile(gpu(micro_batch_per_worker=64, compile_mode="max-autotune-no-cudagraphs"), 1000, COST)
    assert kept.compiled and kept.mode == "max-autotune-no-cudagraphs"
    # and an eager small batch stays in the default mode
    assert decide_compile(gpu(micro_batch_per_worker=64), 10, COST).mode == "default"


def test_accumulation_counts_every_micro_batch_of_a_step():
    # 2 micro batches of 100: 100 steps save what 200 steps of one do
    decision = decide_compile(gpu(grad_accum_steps=2), planned_steps=101, measured=COST)
    assert decision.compiled


@pytest.mark.parametrize(
    ("values", "why"),
    [
        ({"device": "cpu"}, "CPU trial (auto compiles GPU trials only)"),
        ({"engine": "fsdp"}, "engine=fsdp does not compile"),
        ({"engine": "megatron"}, "engine=megatron does not compile"),
        ({"engine": "ddp", "num_workers": 2, "tensor_parallel": 2}, "tensor_parallel=2 does not compile"),
        ({"zero_stage": 3}, "zero_stage=3 does not compile"),
    ],
)
def test_cpu_and_engines_that_cannot_compile_stay_eager_however_long(values, why):
    decision = decide_compile(gpu(**values), planned_steps=10**9, measured=COST)
    assert not decision.compiled and decision.reason.startswith(f"auto: eager, {why}")


def test_without_measurements_the_family_defaults_are_used_and_named():
    vit_b = DEFAULT_COSTS["vit_base"]["default"]
    # ViT-B/16 on an H200: 2691 img/s eager, 3406 compiled, 18.05 s more warm-up
    assert (vit_b.compile_s, vit_b.speedup, 1 / vit_b.sample_s) == pytest.approx((18.05, 3406 / 2691, 2691), rel=1e-3)
    params = gpu(model="vit_base_patch16_224", micro_batch_per_worker=256)
    # a step of 256 saves 256/2691.3 x (1 - 2691.3/3406.5) = 0.019969 s: 905 steps pay 18.056 s, 904 do not
    assert not decide_compile(params, planned_steps=904).compiled
    long = decide_compile(params, planned_steps=905)
    assert long.compiled and "(default for vit_base: vit_base_patch16_224 on an NVIDIA H200 at micro batch 256)" in (
        long.reason
    )
    other = default_cost("deit_small_patch16_224")
    assert other.compile_s == vit_b.compile_s and other.source.startswith("no default for deit_small, so default")


def test_max_autotune_pays_only_for_far_longer_trials_by_its_own_default_figures():
    ma = DEFAULT_COSTS["vit_base"]["max-autotune-no-cudagraphs"]
    # hand-written ViT-B/16 on an H100 at 256, three hosts' medians: eager 2548.4 img/s and 2.5 s of warm-up,
    # max-autotune-no-cudagraphs 3292.9 img/s and 323.3 s
    assert (ma.compile_s, ma.speedup, 1 / ma.sample_s) == pytest.approx((320.8, 3292.9 / 2548.4, 2548.4))
    params = gpu(model="vit_base_patch16_224", micro_batch_per_worker=256, compile_mode="max-autotune-no-cudagraphs")
    # a step of 256 saves 256/2548.4 x (1 - 2548.4/3292.9) = 0.0227122 s: 14125 steps pay 320.8 s, 14124 do not
    assert not decide_compile(params, planned_steps=14124).compiled
    long = decide_compile(params, planned_steps=14125)
    assert long.compiled and long.mode == "max-autotune-no-cudagraphs"
    assert long.reason.endswith(
        "(vit_base in max-autotune-no-cudagraphs: hand-written, NVIDIA H100 80GB HBM3, micro batch 256)"
    )
    # the default mode's figures would have compiled it fifteen times sooner
    assert decide_compile(dataclasses.replace(params, compile_mode="default"), planned_steps=1000).compiled


def test_a_mode_without_figures_takes_the_default_modes_and_says_so():
    small = decide_compile(gpu(model="vit_base_patch16_224", micro_batch_per_worker=64), planned_steps=10)
    assert small.mode == "default"  # eager: not worth it
    assert "(no reduce-overhead default, so the default mode's: default for vit_base:" in small.reason


def test_the_defaults_in_the_code_are_what_the_committed_bench_summary_gives():
    import importlib.util

    from raysweep.core.compile_defaults import MEASURED_DEFAULTS

    path = Path(__file__).resolve().parents[1] / "docs/results/h200-bench/compile_defaults.py"
    spec = importlib.util.spec_from_file_location("compile_defaults_script", path)
    script = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(script)
    assert MEASURED_DEFAULTS == script.measured_defaults()
    assert Path(script.TARGET).read_text() == script.module_text()  # regenerate with the script, never by hand


def test_a_set_compile_is_kept_and_says_so():
    assert decide_compile(gpu(compile="true"), 1).reason == "compile=true"
    assert decide_compile(gpu(compile="false"), 10**9).compiled is False


def trial_row(compiled: bool, warmup_s: float, rate: float, **values) -> dict:
    row = {
        "model": "vit_micro_patch4_32",
        "image_size": 0,
        "micro_batch_per_worker": 100,
        "precision": "fp32",
        "device": "gpu",
        "status": "completed",
        "compiled": compiled,
        "warmup_s": warmup_s,
        "throughput_per_worker": rate,
    }
    return {**row, **values}


def test_measured_figures_are_the_medians_of_the_sweeps_compiled_and_eager_trials_of_the_shape():
    rows = [
        trial_row(False, 1.0, 1000.0),
        trial_row(False, 3.0, 1000.0),
        trial_row(True, 12.0, 2000.0),
        trial_row(True, 2000.0, 1.0, status="failed"),  # not completed
        trial_row(True, 2000.0, 1.0, micro_batch_per_worker=64),  # another shape
        {**trial_row(True, 2000.0, 1.0), "compiled": None},  # written before the column
    ]
    cost = measured_cost(rows, gpu(precision="fp32"))
    assert cost == CompileCost(10.0, 2.0, 1e-3, "measured: 1 compiled and 2 eager earlier trials of this shape")
    assert decide_compile(gpu(precision="fp32"), 201, cost).reason.endswith(
        "(measured: 1 compiled and 2 eager earlier trials of this shape)"
    )


def test_measurements_count_only_compiled_trials_of_the_mode_the_trial_would_compile_in():
    rows = [
        trial_row(False, 1.0, 1000.0),
        {**trial_row(True, 301.0, 2000.0), "compile": "true", "compile_mode": "max-autotune-no-cudagraphs"},
        {**trial_row(True, 11.0, 1500.0), "compile": "auto", "compile_mode": "default"},
    ]
    ma = measured_cost(rows, gpu(precision="fp32", compile_mode="max-autotune-no-cudagraphs"))
    assert (ma.compile_s, ma.speedup) == (300.0, 2.0)
    default = measured_cost(rows, gpu(precision="fp32"))
    assert (default.compile_s, default.speedup) == (10.0, 1.5)
    # at micro batch 64 auto compiles in reduce-overhead: a compile=auto row there ran in it, whatever its
    # compile_mode says, and a compile=true row in the default mode did not
    small = [
        {**row, "micro_batch_per_worker": 64}
        for row in (
            trial_row(False, 1.0, 1000.0),
            {**trial_row(True, 21.0, 3000.0), "compile": "auto", "compile_mode": "default"},
            {**trial_row(True, 11.0, 1500.0), "compile": "true", "compile_mode": "default"},
        )
    ]
    assert measured_cost(small, gpu(precision="fp32", micro_batch_per_worker=64)).speedup == 3.0
    assert measured_cost(rows, gpu(precision="fp32", compile_mode="reduce-overhead")) is None


def test_measurements_need_a_compiled_and_an_eager_trial():
    assert measured_cost([trial_row(False, 1.0, 1000.0)], gpu(precision="fp32")) is None
    assert measured_cost([], gpu()) is None


@pytest.mark.parametrize(("given", "value"), [("auto", "auto"), ("AUTO", "auto"), (True, "true"), ("no", "false")])
def test_compile_takes_true_false_or_auto(given, value):
    assert TrialParams.from_dict({"compile": given}).compile == value


def test_a_boolean_given_to_the_field_directly_is_its_flag():
    # an Optuna proposal of a choice axis replaces the field without from_dict
    assert dataclasses.replace(TrialParams(), compile=True).compile == "true"
    assert TrialParams(compile=False).compile == "false"


def test_another_compile_value_is_refused_naming_the_allowed_ones():
    with pytest.raises(UsageError, match=r"^compile='maybe' is not one of false, true, auto$"):
        TrialParams.from_dict({"compile": "maybe"})


def test_the_dry_runs_table_shows_autos_planned_choice_and_each_reason_once():
    from raysweep.planning.plan import trial_table

    short = gpu(model="vit_base_patch16_224", dataset="synthetic", train_samples=51200)
    trials = [
        gpu(device="cpu"),
        short,
        dataclasses.replace(short, micro_batch_per_worker=64, train_samples=1281167),
        gpu(dataset="imagefolder", data_dir="/data"),  # the whole split: steps known once it is read
        gpu(device="cpu", seed=1),
    ]
    lines = trial_table(trials).splitlines()
    start, end = lines[0].index("compile_choice"), lines[0].index("needs")
    labels = [line[start:end].strip() for line in lines[2:7]]
    assert labels == ["eager", "eager", "compiled (reduce-overhead)", "at start", "eager"]
    reasons = lines[7:]  # trial 1: 51200 / 100 = 512 steps an epoch, 2 epochs, each saving 100/2691 x 0.21 s
    assert reasons[0] == "compile, trials 0, 4: auto: eager, CPU trial (auto compiles GPU trials only)"
    assert reasons[1].startswith("compile, trial 1: auto: eager, 1024 steps save ~8.0 s")
    assert reasons[2].startswith("compile, trial 2: auto: compiled in reduce-overhead")
    assert len(reasons) == 3


def test_a_set_compile_adds_no_choice_column():
    from raysweep.planning.plan import trial_table

    assert "compile_choice" not in trial_table([gpu(compile="true"), gpu(compile="false")])


def test_the_driver_measures_from_the_sweeps_own_trials_table(tmp_path):
    from raysweep.core.spec import TrialSpec
    from raysweep.core.store import ResultStore
    from raysweep.runtime.driver import measured_compile_cost

    store = ResultStore(tmp_path, "sweep")
    params = gpu(precision="fp32")
    for i, (compiled, warmup, rate) in enumerate([(False, 1.0, 1000.0), (True, 11.0, 2000.0)]):
        row = {**trial_row(compiled, warmup, rate), "compile": "true" if compiled else "false", "num_workers": 1}
        store.write_rows("trials", f"t{i}", [row])
    spec = TrialSpec("sweep", str(store.root), str(store.root / "_ray"), 60, 0, True, 0, params)
    assert measured_compile_cost(spec) == CompileCost(
        10.0, 2.0, 1e-3, "measured: 1 compiled and 1 eager earlier trials of this shape"
    )
    # only compile=auto on a GPU asks
    assert measured_compile_cost(dataclasses.replace(spec, params=gpu(compile="true"))) is None
    assert measured_compile_cost(dataclasses.replace(spec, params=gpu(device="cpu"))) is None
