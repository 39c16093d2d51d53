"""TrialParams: coercion of YAML / --set values, derived batch sizes and learning rates, resolve, validate."""

from __future__ import annotations

import dataclasses
import re

import pytest

from raysweep.core.errors import UsageError
from raysweep.core.params import LR_RULES, TrialParams


def params(**values) -> TrialParams:
    return TrialParams.from_dict(values)


# ---- coercion -----------------------------------------------------------------------


@pytest.mark.parametrize(
    ("name", "raw", "expected"),
    [
        ("num_workers", "4", 4),
        ("num_workers", 4, 4),
        ("num_workers", 4.0, 4),
        ("micro_batch_per_worker", "64", 64),
        ("lr", "0.001", 0.001),
        ("lr", "1e-3", 0.001),  # YAML 1.1 reads 1e-3 as a string: it must still become a float
        ("lr", 1, 1.0),
        ("cpus_per_worker", "0.5", 0.5),
        ("compile", "true", "true"),
        ("compile", "False", "false"),
        ("compile", "yes", "true"),
        ("compile", "0", "false"),
        ("compile", True, "true"),
        ("download", False, False),
        ("slow_ranks", "1,3", "1,3"),
        ("slow_ranks", [1, 3], "1,3"),
        ("slow_ranks", 0, "0"),
        ("model", "vit_tiny_patch16_224", "vit_tiny_patch16_224"),
    ],
)
def test_from_dict_coerces_yaml_and_set_strings_to_the_field_type(name, raw, expected):
    value = getattr(params(**{name: raw}), name)
    assert value == expected
    assert type(value) is type(expected)


def test_slow_ranks_string_becomes_a_list_of_ints():
    assert params(slow_ranks="1,3", num_workers=4).slow_rank_list == [1, 3]
    assert params(slow_ranks=" 0 , 2 ").slow_rank_list == [0, 2]
    assert params().slow_rank_list == []


@pytest.mark.parametrize(
    ("name", "raw", "message"),
    [
        ("num_workers", "abc", "num_workers must be an integer, got 'abc'"),
        ("num_workers", 2.5, "num_workers must be an integer, got 2.5"),
        ("num_workers", True, "num_workers must be an integer, got True"),
        ("lr", "fast", "lr must be a number, got 'fast'"),
        ("lr", False, "lr must be a number"),
        ("compile", "maybe", "compile='maybe' is not one of false, true, auto"),
        ("model", ["a", "b"], "model must be a string"),
        ("model", True, "model must be a string"),
    ],
)
def test_from_dict_names_the_field_whose_value_has_the_wrong_type(name, raw, message):
    with pytest.raises(UsageError, match=re.escape(message)):
        params(**{name: raw})


def test_from_dict_rejects_unknown_parameter_and_lists_known_ones():
    with pytest.raises(UsageError) as e:
        params(num_worker=2)
    assert "unknown trial parameter 'num_worker'" in str(e.value)
    assert "num_workers" in str(e.value)


def test_bool_accepts_yaml_integers_one_and_zero():
    assert params(download=1).download is True
    assert params(download=0).download is False


def test_to_dict_round_trips_through_from_dict():
    p = params(num_workers=2, slow_ranks="1", lr=0.01, compile=True)
    assert TrialParams.from_dict(p.to_dict()) == p


# ---- batch sizes and learning rates ---------------------------------------------------


@pytest.mark.parametrize(("micro", "accum", "workers"), [(32, 1, 1), (16, 4, 2), (8, 2, 8)])
def test_train_batch_size_is_micro_times_accum_times_workers(micro, accum, workers):
    p = params(micro_batch_per_worker=micro, grad_accum_steps=accum, num_workers=workers)
    assert p.effective_micro_batch == micro
    assert p.train_batch_size == micro * accum * workers


def test_global_batch_derives_the_micro_batch():
    p = params(global_batch=256, grad_accum_steps=2, num_workers=4, micro_batch_per_worker=999)
    assert p.effective_micro_batch == 32
    assert p.train_batch_size == 256
    p.validate()


def test_global_batch_not_divisible_by_accum_times_workers_is_rejected():
    p = params(global_batch=100, grad_accum_steps=2, num_workers=4)
    with pytest.raises(UsageError) as e:
        p.validate()
    assert "global_batch=100 is not divisible" in str(e.value)
    assert "pick a multiple of 8" in str(e.value)


@pytest.mark.parametrize("optimizer", sorted(LR_RULES))
def test_learning_rate_at_the_reference_batch_is_the_base_rate(optimizer):
    base, ref, _ = LR_RULES[optimizer]
    p = params(optimizer=optimizer, micro_batch_per_worker=ref)
    assert p.learning_rate == pytest.approx(base)


def test_sgd_learning_rate_scales_linearly_with_the_global_batch():
    small = params(optimizer="sgd", micro_batch_per_worker=64, num_workers=1)
    large = params(optimizer="sgd", micro_batch_per_worker=64, num_workers=4)
    assert large.learning_rate == pytest.approx(4 * small.learning_rate)
    assert params(optimizer="sgd", micro_batch_per_worker=512).learning_rate == pytest.approx(0.2)


@pytest.mark.parametrize("optimizer", ["adamw", "lamb"])
def test_adaptive_learning_rate_scales_with_the_square_root_of_the_global_batch(optimizer):
    small = params(optimizer=optimizer, micro_batch_per_worker=64, num_workers=1)
    large = params(optimizer=optimizer, micro_batch_per_worker=64, grad_accum_steps=2, num_workers=8)  # 16x
    assert large.learning_rate == pytest.approx(4 * small.learning_rate)


def test_explicit_lr_overrides_the_scaling_rule():
    assert params(lr=0.123, optimizer="sgd", num_workers=8).learning_rate == 0.123


# ---- resolve ---------------------------------------------------------------------------


@pytest.mark.parametrize(
    ("device", "precision", "has_gpus", "expected"),
    [
        ("auto", "auto", True, ("gpu", "bf16")),
        ("auto", "auto", False, ("cpu", "fp32")),
        ("cpu", "auto", True, ("cpu", "fp32")),
        ("gpu", "auto", False, ("gpu", "bf16")),
        ("auto", "fp16", True, ("gpu", "fp16")),
        ("auto", "fp32", True, ("gpu", "fp32")),
    ],
)
def test_resolve_fills_auto_device_and_precision(device, precision, has_gpus, expected):
    p = params(device=device, precision=precision)
    r = p.resolve(cluster_has_gpus=has_gpus)
    assert (r.device, r.precision) == expected
    assert p.device == device  # resolve returns a new record
    assert dataclasses.replace(r, device=device, precision=precision) == p


# ---- validate ----------------------------------------------------------------------------


def test_defaults_are_valid():
    TrialParams().validate()
    TrialParams().resolve(cluster_has_gpus=False).validate()


@pytest.mark.parametrize(
    ("values", "fragments"),
    [
        (
            {"placement_strategy": "pack"},
            ["placement_strategy='pack'", "PACK", "SPREAD", "STRICT_PACK", "STRICT_SPREAD"],
        ),
        ({"device": "tpu"}, ["device='tpu'", "auto", "cpu", "gpu"]),
        ({"optimizer": "adam"}, ["optimizer='adam'", "adamw", "sgd", "lamb"]),
        ({"engine": "jax"}, ["engine='jax'", "deepspeed", "ddp", "fsdp", "megatron"]),
        ({"lr_schedule": "step"}, ["lr_schedule='step'", "constant", "cosine"]),
        ({"num_workers": 3, "sequence_parallel": 2}, ["num_workers=3 is not a multiple of sequence_parallel=2"]),
        ({"zero_stage": 4}, ["zero_stage=4", "0, 1, 2, 3"]),
        ({"micro_batch_per_worker": 0}, ["micro_batch_per_worker must be a positive integer, got 0"]),
        ({"micro_batch_per_worker": -8}, ["micro_batch_per_worker must be a positive integer, got -8"]),
        ({"num_workers": 0}, ["num_workers must be a positive integer, got 0"]),
        ({"grad_accum_steps": 0}, ["grad_accum_steps must be a positive integer"]),
        ({"device": "cpu", "precision": "bf16"}, ["precision=bf16 needs a GPU", "precision=fp32"]),
        ({"device": "cpu", "precision": "fp16"}, ["precision=fp16 needs a GPU", "precision=fp32"]),
        ({"engine": "ddp", "zero_stage": 2}, ["zero_stage > 0 needs engine=deepspeed"]),
        ({"slow_ranks": "1,3", "num_workers": 2}, ["slow_ranks [3] outside 0..1", "num_workers=2"]),
        ({"slow_ranks": "-1", "num_workers": 2}, ["slow_ranks [-1] outside 0..1"]),
        ({"dataset": "cifar10"}, ["dataset=cifar10 needs data_dir"]),
        ({"dataset": "cifar100"}, ["dataset=cifar100 needs data_dir"]),
        ({"dataset": "imagefolder"}, ["dataset=imagefolder needs data_dir"]),
        ({"cpus_per_worker": 0}, ["cpus_per_worker must be > 0"]),
        ({"image_size": -1}, ["image_size must be >= 0"]),
        ({"engine": "fsdp", "zero_stage": 1}, ["zero_stage=1 needs engine=deepspeed"]),
        ({"engine": "fsdp", "device": "gpu", "precision": "fp16"}, ["precision=fp16", "engine=fsdp"]),
        ({"engine": "fsdp", "compile": True}, ["compile=true", "engine=fsdp"]),
        ({"engine": "fsdp", "num_workers": 2, "sequence_parallel": 2}, ["sequence_parallel=2", "engine=fsdp"]),
        ({"engine": "fsdp", "num_workers": 2, "slow_ranks": "1"}, ["slow_ranks='1'", "engine=fsdp"]),
    ],
)
def test_validate_names_the_bad_field_and_what_is_allowed(values, fragments):
    p = params(**values)
    with pytest.raises(UsageError) as e:
        p.validate()
    for fragment in fragments:
        assert fragment in str(e.value)


def test_validate_accepts_the_good_neighbours_of_the_bad_values(tmp_path):
    params(slow_ranks="0,1", num_workers=2).validate()
    params(engine="ddp", zero_stage=0).validate()
    params(device="gpu", precision="bf16").validate()
    params(dataset="cifar10", data_dir=str(tmp_path), download=True).validate()
    params(placement_strategy="STRICT_SPREAD").validate()
    params(engine="fsdp", num_workers=2, device="gpu", precision="bf16").validate()


NUMERIC_FIELDS = [f.name for f in dataclasses.fields(TrialParams) if type(f.default) in (int, float)]
FLOAT_FIELDS = [f.name for f in dataclasses.fields(TrialParams) if type(f.default) is float]


@pytest.mark.parametrize("name", NUMERIC_FIELDS)
def test_every_numeric_parameter_has_a_range_that_refuses_a_negative_value(name):
    with pytest.raises(UsageError, match=name):
        params(**{name: -1}).validate()


@pytest.mark.parametrize("value", ["nan", "inf", "-inf"])
@pytest.mark.parametrize("name", FLOAT_FIELDS)
def test_every_float_parameter_refuses_a_non_finite_value(name, value):
    with pytest.raises(UsageError, match=f"^{name} must be a finite number, got {value}$"):
        params(**{name: value}).validate()


def test_sequence_parallel_refuses_zero_3_and_runs_with_zero_2():
    with pytest.raises(UsageError, match=r"sequence_parallel=2 supports zero_stage in \(0, 1, 2\), got zero_stage=3"):
        params(num_workers=2, sequence_parallel=2, zero_stage=3).validate()
    params(num_workers=2, sequence_parallel=2, zero_stage=2).validate()


def test_non_integer_slow_ranks_is_a_usage_error():
    with pytest.raises(UsageError, match="slow_ranks"):
        params(slow_ranks="a", num_workers=2).validate()
