"""build_deepspeed_config: precision, ZeRO stage and batch sizes, checked by DeepSpeed's own config class."""

from __future__ import annotations

import inspect

import pytest

from raysweep.core.params import TrialParams
from trainers.engines.deepspeed_config import build_deepspeed_config


def params(**values) -> TrialParams:
    return TrialParams.from_dict(values)


@pytest.fixture
def deepspeed_config_class(monkeypatch):
    """DeepSpeed's config class, parsing as a single process (no process group is initialised here)."""
    monkeypatch.setenv("WORLD_SIZE", "1")
    monkeypatch.setenv("RANK", "0")
    monkeypatch.setenv("LOCAL_RANK", "0")
    monkeypatch.setenv("DS_ACCELERATOR", "cpu")
    from deepspeed.runtime.config import DeepSpeedConfig

    assert "mpu" in inspect.signature(DeepSpeedConfig.__init__).parameters
    return DeepSpeedConfig


@pytest.mark.parametrize(
    ("precision", "amp", "autocast", "bf16", "fp16"),
    [
        ("fp32", "auto", False, False, False),
        ("bf16", "auto", True, False, False),
        ("bf16", "deepspeed", False, True, False),
        ("fp16", "auto", False, False, True),
        ("fp16", "autocast", True, False, False),
    ],
)
def test_precision_switches_exactly_one_mode(precision, amp, autocast, bf16, fp16):
    """bf16 runs under torch autocast over fp32 weights by default; fp16 uses DeepSpeed's loss-scaling engine."""
    config = build_deepspeed_config(params(precision=precision, amp=amp))
    assert config["torch_autocast"]["enabled"] is autocast
    assert config["bf16"]["enabled"] is bf16
    assert config["fp16"]["enabled"] is fp16
    assert config["fp16"]["loss_scale"] == 0  # dynamic loss scaling when fp16 is on
    if autocast:
        assert config["torch_autocast"]["dtype"] == {"bf16": "bfloat16", "fp16": "float16"}[precision]


@pytest.mark.parametrize("stage", [0, 1, 2, 3])
def test_zero_stage_and_overlap_only_when_zero_is_on(stage):
    zero = build_deepspeed_config(params(zero_stage=stage))["zero_optimization"]
    assert zero["stage"] == stage
    assert zero["overlap_comm"] is (stage > 0)
    assert zero["contiguous_gradients"] is (stage > 0)


@pytest.mark.parametrize(
    ("values", "micro", "accum", "total"),
    [
        ({"micro_batch_per_worker": 32}, 32, 1, 32),
        ({"micro_batch_per_worker": 16, "grad_accum_steps": 4, "num_workers": 2}, 16, 4, 128),
        ({"global_batch": 512, "grad_accum_steps": 2, "num_workers": 8}, 32, 2, 512),
    ],
)
def test_batch_sizes_follow_micro_times_accum_times_workers(values, micro, accum, total):
    config = build_deepspeed_config(params(**values))
    assert config["train_micro_batch_size_per_gpu"] == micro
    assert config["gradient_accumulation_steps"] == accum
    assert config["train_batch_size"] == total
    assert config["zero_allow_untested_optimizer"] is True  # timm's optimizer is handed in
    assert config["steps_per_print"] >= 10**6  # DeepSpeed's own step logging stays quiet


@pytest.mark.parametrize("precision", ["fp32", "bf16", "fp16"])
@pytest.mark.parametrize("stage", [0, 1, 2, 3])
@pytest.mark.parametrize(("micro", "accum"), [(32, 1), (8, 4)])
def test_deepspeed_accepts_the_config(deepspeed_config_class, precision, stage, micro, accum):
    p = params(precision=precision, zero_stage=stage, micro_batch_per_worker=micro, grad_accum_steps=accum)
    ds = deepspeed_config_class(build_deepspeed_config(p), mpu=None)
    assert ds.world_size == 1
    assert ds.train_batch_size == p.train_batch_size == micro * accum * ds.world_size
    assert ds.train_micro_batch_size_per_gpu == micro
    assert ds.gradient_accumulation_steps == accum
    assert ds.zero_optimization_stage == stage
    assert ds.torch_autocast_enabled is (precision == "bf16")  # amp=auto: autocast for bf16
    assert ds.bfloat16_config.enabled is False
    assert ds.float16_config.enabled is (precision == "fp16")


def test_deepspeed_rejects_a_multi_rank_config_in_a_single_process(deepspeed_config_class):
    """Without a process group DeepSpeed sees one rank: a 4-rank config must fail its batch check there.

    This pins that DeepSpeed really checks train_batch_size == micro x accum x world against our numbers;
    accepting a multi-rank config itself needs an initialised process group (the integration tests).
    """
    p = params(num_workers=4, micro_batch_per_worker=8)
    with pytest.raises(AssertionError, match="train_batch_size is not equal to micro_batch_per_gpu"):
        deepspeed_config_class(build_deepspeed_config(p), mpu=None)
