"""The engine registry: the LR schedule's known values, and DeepSpeed's engine (held, not patched) computing
the same updates as a plain PyTorch loop with the same clipping, accumulation and schedule (CPU, gloo, 1 rank)."""

from __future__ import annotations

import gc
import math
import os
import socket
import subprocess
import sys
import weakref

import pytest
import torch
import torch.distributed as dist
import torch.nn.functional as F

from raysweep.core.params import TrialParams
from trainers.engines import ENGINES, build_engine, build_optimizer, lr_factor
from trainers.engines.deepspeed import clips_outside_deepspeed
from trainers.engines.deepspeed_config import GRAD_CLIP_NORM
from trainers.measure.hardware import live_tensor_bytes
from trainers.process_state import ProcessState


def test_every_engine_parameter_value_has_an_engine():
    from raysweep.core.params import ENGINES as ENGINE_NAMES

    assert set(ENGINES) == set(ENGINE_NAMES)


@pytest.mark.parametrize(
    ("step", "schedule", "expected"),
    [
        (0, "cosine", 0.5),  # warm-up of 2 steps (0.2 x 10): 1/2, then 2/2
        (1, "cosine", 1.0),
        (2, "cosine", 1.0),  # cosine starts at the peak ...
        (6, "cosine", 0.5),  # ... is half-way at 4 of its 8 steps ...
        (10, "cosine", 0.0),  # ... and 0 at the end
        (0, "constant", 0.5),
        (7, "constant", 1.0),
    ],
)
def test_lr_factor_known_values(step, schedule, expected):
    assert lr_factor(step, total_steps=10, warmup_share=0.2, schedule=schedule) == pytest.approx(expected, abs=1e-12)


def test_no_warmup_starts_at_the_peak():
    assert lr_factor(0, 100, 0.0, "cosine") == 1.0
    assert lr_factor(25, 100, 0.0, "cosine") == pytest.approx(0.5 * (1 + math.cos(math.pi / 4)))


@pytest.mark.parametrize(
    ("values", "ours"),
    [
        ({"precision": "fp32"}, True),
        ({"device": "gpu", "precision": "bf16", "amp": "autocast"}, True),
        ({"device": "gpu", "precision": "bf16", "amp": "deepspeed"}, False),  # DeepSpeed's bf16 engine clips
        ({"device": "gpu", "precision": "fp16", "amp": "autocast"}, False),  # its GradScaler unscales first
        ({"precision": "fp32", "zero_stage": 1}, False),  # ZeRO clips its partitions
    ],
)
def test_we_clip_only_where_the_gradients_are_the_true_fp32_ones(values, ours):
    assert clips_outside_deepspeed(TrialParams.from_dict(values)) is ours


@pytest.fixture(scope="module")
def one_rank_group():
    """One gloo group for the module: DeepSpeed keeps the first group it sees for the process's life."""
    os.environ.setdefault("DS_ACCELERATOR", "cpu")
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        port = s.getsockname()[1]
    env = {"MASTER_ADDR": "127.0.0.1", "MASTER_PORT": str(port), "RANK": "0", "WORLD_SIZE": "1", "LOCAL_RANK": "0"}
    old = {k: os.environ.get(k) for k in env}
    os.environ.update(env)
    dist.init_process_group("gloo", rank=0, world_size=1)
    yield
    dist.destroy_process_group()
    for k, v in old.items():
        if v is None:
            os.environ.pop(k, None)
        else:
            os.environ[k] = v


def tiny_vit() -> torch.nn.Module:
    from timm.models.vision_transformer import VisionTransformer

    torch.manual_seed(0)
    return VisionTransformer(img_size=8, patch_size=4, num_classes=3, embed_dim=16, depth=1, num_heads=2)


def batches(n: int):
    g = torch.Generator().manual_seed(1)
    return [(torch.randn(4, 3, 8, 8, generator=g), torch.randint(0, 3, (4,), generator=g)) for _ in range(n)]


def train(engine, data) -> list[float]:
    """One engine step per micro batch, as the training loop takes it; the losses."""
    losses = []
    for x, y in data:
        loss = F.cross_entropy(engine(x), y)
        engine.backward(loss)
        engine.step()
        losses.append(loss.item())
    return losses


def plain_torch_losses(params: TrialParams, data, steps: int, accum: int) -> tuple[list[float], list[float]]:
    """The reference loop: timm's optimizer, clipping at the boundary, the schedule stepped once per update."""
    model = tiny_vit()
    optimizer = build_optimizer(params, model, torch.device("cpu"))  # timm's SGD: Nesterov, no decay on norms
    schedule = torch.optim.lr_scheduler.LambdaLR(optimizer, lambda s: lr_factor(s, steps, 0.25, "cosine"))
    losses, norms = [], []
    for i, (x, y) in enumerate(data):
        loss = F.cross_entropy(model(x), y)
        (loss / accum).backward()
        losses.append(loss.item())
        if (i + 1) % accum == 0:
            norms.append(float(torch.nn.utils.clip_grad_norm_(model.parameters(), GRAD_CLIP_NORM)))
            optimizer.step()
            schedule.step()
            optimizer.zero_grad()
    return losses, norms


def test_deepspeed_engine_matches_plain_torch_with_clipping_accumulation_and_schedule(one_rank_group):
    steps, accum = 4, 2
    params = TrialParams.from_dict(
        {"optimizer": "sgd", "lr": 0.5, "grad_accum_steps": accum, "micro_batch_per_worker": 4, "lr_warmup": 0.25}
    ).resolve(cluster_has_gpus=False)
    data = batches(steps * accum)
    engine = build_engine(params, tiny_vit(), torch.device("cpu"), total_steps=steps)
    ours = train(engine, data)

    reference, norms = plain_torch_losses(params, data, steps, accum)
    assert max(norms) > GRAD_CLIP_NORM, "the clipping must change an update for this test to pin it"
    assert ours == pytest.approx(reference, rel=1e-5)
    # The schedule stepped once per optimizer step: it stands at step `steps` (cosine's end, 0).
    assert engine.ds.get_lr() == pytest.approx([0.5 * lr_factor(steps, steps, 0.25, "cosine")] * 2)


def test_a_one_rank_zero0_engine_does_not_reduce_its_gradients_and_takes_the_same_updates(one_rank_group):
    # the reduction over one rank is a copy scaled by 1: without it the parameters are bitwise the same
    params = TrialParams.from_dict({"optimizer": "adamw", "lr": 0.01, "micro_batch_per_worker": 4}).resolve(
        cluster_has_gpus=False
    )
    data = batches(4)
    skipping = build_engine(params, tiny_vit(), torch.device("cpu"), total_steps=4)
    reducing = build_engine(params, tiny_vit(), torch.device("cpu"), total_steps=4)
    reducing.ds.enable_backward_allreduce = True  # DeepSpeed's default
    assert not skipping.ds.enable_backward_allreduce
    assert train(skipping, data) == train(reducing, data)
    for ours, theirs in zip(skipping.ds.module.parameters(), reducing.ds.module.parameters()):
        assert torch.equal(ours, theirs)
    # DeepSpeed clips and reduces itself (ZeRO 1-3, its low-precision engines): its reduction stays on
    zero1 = TrialParams.from_dict({"zero_stage": 1, "micro_batch_per_worker": 4}).resolve(cluster_has_gpus=False)
    engine = build_engine(zero1, tiny_vit(), torch.device("cpu"), total_steps=4)
    assert engine.ds.enable_backward_allreduce
    engine.close()


def test_accelerate_engine_matches_plain_torch_with_clipping_accumulation_and_schedule(one_rank_group):
    steps, accum = 4, 2
    params = TrialParams.from_dict(
        {
            "engine": "accelerate",
            "optimizer": "sgd",
            "lr": 0.5,
            "grad_accum_steps": accum,
            "micro_batch_per_worker": 4,
            "lr_warmup": 0.25,
        }
    ).resolve(cluster_has_gpus=False)
    data = batches(steps * accum)
    engine = build_engine(params, tiny_vit(), torch.device("cpu"), total_steps=steps)
    ours = train(engine, data)
    reference, norms = plain_torch_losses(params, data, steps, accum)
    assert max(norms) > GRAD_CLIP_NORM, "the clipping must change an update for this test to pin it"
    assert ours == pytest.approx(reference, rel=1e-5)
    # Once per optimizer step, not once per process per step (Accelerate's own scheduler wrapper).
    schedule = engine.accumulation.scheduler
    assert schedule.get_last_lr() == pytest.approx([0.5 * lr_factor(steps, steps, 0.25, "cosine")] * 2)


def test_accelerate_engine_checkpoint_resumes_the_same_losses(one_rank_group, tmp_path):
    params = TrialParams.from_dict(
        {"engine": "accelerate", "optimizer": "adamw", "lr": 0.01, "micro_batch_per_worker": 4}
    ).resolve(cluster_has_gpus=False)
    data = batches(6)

    expected = train(build_engine(params, tiny_vit(), torch.device("cpu"), total_steps=6), data)
    first = build_engine(params, tiny_vit(), torch.device("cpu"), total_steps=6)
    train(first, data[:3])
    first.save(tmp_path, rank=0)
    resumed = build_engine(params, tiny_vit(), torch.device("cpu"), total_steps=6)
    resumed.load(tmp_path)
    assert train(resumed, data[3:]) == pytest.approx(expected[3:], rel=1e-5)


def test_deepspeed_engine_checkpoint_resumes_the_same_losses_and_schedule(one_rank_group, tmp_path):
    params = TrialParams.from_dict(
        {"optimizer": "adamw", "lr": 0.01, "grad_accum_steps": 1, "micro_batch_per_worker": 4}
    ).resolve(cluster_has_gpus=False)
    data = batches(6)

    straight = build_engine(params, tiny_vit(), torch.device("cpu"), total_steps=6)
    expected = train(straight, data)
    first = build_engine(params, tiny_vit(), torch.device("cpu"), total_steps=6)
    train(first, data[:3])
    first.save(tmp_path, rank=0)
    resumed = build_engine(params, tiny_vit(), torch.device("cpu"), total_steps=6)
    resumed.load(tmp_path)
    assert resumed.ds.get_lr() == pytest.approx(first.ds.get_lr())  # the schedule's state came back too
    assert train(resumed, data[3:]) == pytest.approx(expected[3:], rel=1e-5)


@pytest.mark.parametrize(
    "values",
    [
        {"zero_stage": 0},
        {"zero_stage": 1},  # its gradient hooks kept the engine alive from the autograd graph, unseen by gc
        {"zero_stage": 2},
        {"zero_stage": 3},  # also its module stack and parameter-release cache, and its F.linear
        {"engine": "fsdp"},
        {"engine": "accelerate"},
    ],
    ids=lambda values: "-".join(f"{k}={v}" for k, v in values.items()),
)
def test_a_trial_closed_in_a_shared_worker_leaves_no_model_memory_or_process_state(one_rank_group, values):
    """What a shared worker group's process does at a trial's end (``train_trial`` closes the engine, the
    trial server restores the process state): the trial's model is freed, the live tensor bytes are back
    to what they were before it, and torch's patched functions, global hooks and flags are the earlier ones."""
    params = TrialParams.from_dict({"optimizer": "adamw", "lr": 0.01, "micro_batch_per_worker": 4, **values}).resolve(
        cluster_has_gpus=False
    )
    baseline = live_tensor_bytes()
    process = ProcessState.capture()
    model = tiny_vit()
    model_alive = weakref.ref(model)
    engine = build_engine(params, model, torch.device("cpu"), total_steps=2)
    train(engine, batches(2))
    engine.close()
    process.restore()
    del engine, model
    gc.collect()  # the engines' reference cycles are garbage now, as at the trial server's next start
    assert model_alive() is None, "something still holds the trial's model"
    assert live_tensor_bytes() - baseline <= 1024  # a few scalars at most (FSDP2 keeps one)
    assert ProcessState.capture() == process


def test_process_state_puts_back_patched_functions_global_hooks_and_flags():
    process = ProcessState.capture()
    linear = torch.nn.functional.linear
    try:
        torch.nn.functional.linear = lambda x, w, b=None: linear(x, w, b)
        torch.nn.Module.__init_subclass__ = classmethod(lambda cls, **kwargs: None)  # inherited before
        hook = torch.nn.modules.module.register_module_forward_hook(lambda module, args, output: output)
        torch.backends.cuda.matmul.allow_tf32 = not process.flags["cuda.matmul.allow_tf32"]
        torch.set_default_dtype(torch.float64)
        assert ProcessState.capture() != process
        process.restore()
        assert torch.nn.functional.linear is linear
        assert "__init_subclass__" not in vars(torch.nn.Module)
        assert hook.id not in torch.nn.modules.module._global_forward_hooks
        assert torch.get_default_dtype() == torch.float32
        assert ProcessState.capture() == process
    finally:
        torch.nn.functional.linear = linear
        process.restore()


def test_deepspeed_is_imported_without_mlflow_which_stays_importable():
    """A rank's DeepSpeed import leaves out the MLflow its autotuner would import (most of DeepSpeed's import time,
    for a tuner raysweep never runs); a fresh interpreter, as a rank is."""
    pytest.importorskip("mlflow")
    script = (
        "import sys\n"
        "from trainers.engines.deepspeed import import_deepspeed\n"
        "import_deepspeed()\n"
        "import deepspeed.autotuning.autotuner as tuner\n"
        "assert 'mlflow' not in sys.modules and tuner.has_mlflow is False\n"
        "import mlflow\n"
        "assert mlflow.__version__\n"
    )
    env = {**os.environ, "DS_ACCELERATOR": "cpu"}
    proc = subprocess.run([sys.executable, "-c", script], capture_output=True, text=True, env=env, timeout=120)
    assert proc.returncode == 0, proc.stderr[-2000:]
