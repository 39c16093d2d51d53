"""The per-worker training loop: one rank of a DeepSpeed (or DDP) data-parallel ViT trial.

``train_trial(trial)`` and ``train_epoch`` read as the algorithm; reporting lives in the small helpers
below them, what the steps measure behind the hooks of ``trainers.instruments``, the epoch's division into
steps in ``trainers.epoch_plan``.  Everything a worker needs is in ``trial`` (a ``RankTrial``).
``train_fn_per_worker`` runs one trial as a Ray Train run of its own; ``trainers.trial_server`` runs
trials one after another in a shared worker group.
"""

from __future__ import annotations

import dataclasses
from dataclasses import asdict

import ray.train
import ray.train.torch
import torch
import torch.distributed as dist
import torch.nn.functional as F

from raysweep.core.compile_decision import CompileDecision, decide_compile
from raysweep.core.errors import RankOutOfMemory
from raysweep.core.schema import EPOCH_KEY, RANKS_KEY, TRIAL_ID_KEY, TRIAL_KEY
from raysweep.core.spec import RANK_TRIAL_KEY, RankTrial
from trainers.checkpointing import discard, restore_checkpoint, save_checkpoint
from trainers.data.batches import Batches, make_batches
from trainers.data.datasets import load_dataset
from trainers.engines import Engine, build_engine
from trainers.epoch_plan import EpochPlan
from trainers.group_timeout import use_collective_timeout
from trainers.instruments import Instruments
from trainers.measure.energy import joules_per_sample
from trainers.measure.flops import ComputeRate, peak_flops, training_flops_per_sample
from trainers.measure.hardware import device_name, node_name, peak_memory_gib
from trainers.measure.live_metrics import publish_epoch
from trainers.measure.meter import EpochMeasure, TrialMeter
from trainers.measure.timing import time_allreduce_ms
from trainers.model.activation_checkpointing import apply_activation_checkpointing
from trainers.model.models import create_model, native_image_size
from trainers.model.sequence_parallel import apply_sequence_parallel, build_groups
from trainers.model.tensor_parallel import apply_tensor_parallel, build_mesh
from trainers.numerics import gradient_reduction, set_math_modes


def train_fn_per_worker(config: dict) -> None:
    """One trial, the whole Ray Train run: a restarted worker group resumes from the run's latest checkpoint."""
    trial: RankTrial = config[RANK_TRIAL_KEY]
    train_trial(dataclasses.replace(trial, resume_from=ray.train.get_checkpoint()))


def train_trial(trial: RankTrial) -> None:
    params = trial.params
    context = ray.train.get_context()
    rank, world = context.get_world_rank(), context.get_world_size()
    device = ray.train.torch.get_device()
    torch.manual_seed(params.seed)
    set_math_modes(params.precision)
    meter = TrialMeter(world, trial.started_at)
    meter.mark("worker_started")

    data = load_dataset(params.dataset, params.data_dir, params.download, params.seed)
    meter.mark("data_loaded")
    use_collective_timeout(trial.spec.collective_timeout_s)  # before DeepSpeed and SP make their groups
    groups = build_groups(world, params.sequence_parallel)  # collective: every rank, the same order
    # torch's tensor parallelism (collective too); megatron-core splits its own layers over its own groups
    mesh = build_mesh(world, params.tensor_parallel, device) if params.engine != "megatron" else None
    with torch.device(device):  # initialise the weights where they will live: seconds faster on a GPU
        model = create_model(params.model, data.num_classes, params.image_size, params.in_chans)
    reduction = gradient_reduction(params, model)  # before the engine wraps or shards the model
    compute = ComputeRate(
        training_flops_per_sample(model), peak_flops(device_name(device), params.precision, params.peak_tflops)
    )
    model = apply_tensor_parallel(apply_sequence_parallel(model, groups), mesh)
    model = apply_activation_checkpointing(model, params.activation_checkpointing)
    meter.mark("model_built")
    plan = EpochPlan.of(params, data, start_epoch=0)
    total_steps = plan.steps_per_epoch * params.epochs
    compiling = decide_compile(params, total_steps, trial.compile_cost)
    params = compiling.applied(params)  # every rank decides alike: the same plan and figures
    engine = build_engine(params, model, device, total_steps=total_steps)
    meter.mark("engine_ready")
    image_size = params.image_size or native_image_size(params.model)
    batches = make_batches(params, data, device, image_size, engine.input_dtype, rank)
    if restore_checkpoint(engine, meter, trial.resume_from):
        plan = EpochPlan.of(params, data, start_epoch=len(meter.epochs))  # warm-up again after every start
        if rank == 0:
            print(f"raysweep: resumed from checkpoint after epoch {len(meter.epochs) - 1}", flush=True)
    instruments = Instruments.of(params, plan, meter, rank, world, device, trial.fault_marker_dir)
    allreduce_probe_ms = None

    for epoch in range(len(meter.epochs), params.epochs):
        try:
            measure = train_epoch(engine, batches, plan, epoch, instruments)
        except torch.OutOfMemoryError as e:
            raise RankOutOfMemory(rank, str(e), peak_memory_gib(device)) from e
        measure.val_loss, measure.val_accuracy = evaluate(engine, batches, params.effective_micro_batch, device)
        meter.epochs.append(measure)
        publish_epoch(meter, rank, peak_memory_gib(device), trial.spec.sweep, trial.trial_id)  # live gauges
        if allreduce_probe_ms is None:
            allreduce_probe_ms = time_allreduce_ms(reduction, device)
        last = epoch == params.epochs - 1
        every = params.checkpoint_every
        checkpoint = save_checkpoint(engine, meter, rank) if every and not last and (epoch + 1) % every == 0 else None
        skipped = skipped_files(batches, params.skip_bad_files)
        if last and rank == 0:  # before the last report: the sweep may end as soon as it arrives
            warn_skipped(skipped, trial.trial_id)
        report(
            meter,
            plan,
            allreduce_probe_ms,
            sum(reduction.values()),  # the trainable parameters, whatever dtype each is reduced in
            compute,
            rank,
            device,
            final=last,
            trial=trial,
            compiling=compiling,
            checkpoint=checkpoint,
            skipped_files=len(skipped) if params.skip_bad_files else None,
        )
        discard(checkpoint)
        if not last and stop_requested(trial):
            break
    # A shared worker group's next trial runs in this process: nothing of this one may stay reachable.
    # A trial that raises ends its group (and the process), so only these two ends release.
    engine.close()


def train_epoch(
    engine: Engine, batches: Batches, plan: EpochPlan, epoch: int, instruments: Instruments
) -> EpochMeasure:
    """One epoch of optimizer steps of ``plan.accum`` micro batches each; the instruments measure it."""
    engine.train()
    loss_sum = torch.zeros((), device=instruments.device)
    instruments.on_epoch_start(epoch)
    micro_batches = instruments.timed_batches(batches.train(epoch, plan.micro_batch, plan.steps_per_epoch * plan.accum))
    for step in range(plan.steps_per_epoch):
        instruments.on_step_start(step)
        for i in range(plan.accum):
            x, y = next(micro_batches)
            loss = F.cross_entropy(engine(x).float(), y)
            instruments.before_backward(last_micro_batch=i == plan.accum - 1)
            engine.backward(loss)
            engine.step()
            loss_sum += loss.detach()
        instruments.on_step_end()
    return instruments.on_epoch_end(loss_sum)


@torch.no_grad()
def evaluate(engine, batches: Batches, micro_batch: int, device) -> tuple[float | None, float | None]:
    """Loss and accuracy on the held-out split, summed over all ranks' shards."""
    engine.eval()
    totals = torch.zeros(3, device=device, dtype=torch.float64)  # loss sum, correct, count
    for x, y in batches.validation(micro_batch):
        logits = engine(x).float()
        totals[0] += F.cross_entropy(logits, y, reduction="sum")
        totals[1] += (logits.argmax(-1) == y).sum()
        totals[2] += len(y)
    if dist.is_initialized():
        dist.all_reduce(totals)
    loss, correct, count = totals.tolist()
    return (loss / count, correct / count) if count else (None, None)


def skipped_files(batches: Batches, skip: bool) -> dict:
    """With ``skip_bad_files``: every rank's skipped files so far (path: its ``DataFileError``), the same on every
    rank (a collective of every rank); else nothing (a bad file has stopped the trial)."""
    if not skip:
        return {}
    found = {}
    for rank_found in gather(batches.unreadable.found):
        for path, error in rank_found.items():
            found.setdefault(path, error)
    return found


def warn_skipped(skipped: dict, trial_id: str) -> None:
    """The trial's one warning about the files it skipped: how many, and the first."""
    if skipped:
        first = next(iter(skipped.values()))
        print(
            f"raysweep: warning: skip_bad_files: trial {trial_id} skipped {len(skipped)} file(s) that cannot be "
            f"read, the first {first.path} {first.reason}",
            flush=True,
        )


def stop_requested(trial: RankTrial) -> bool:
    """Tune stopped the trial (a shared group's check, ``trial_server.stop_check``); every rank ends at once.

    The ranks may ask on either side of the stop's arrival: the answer is any rank's, so none goes on alone.
    """
    asked = trial.stop_requested
    return asked is not None and any(gather(asked()))


def gather(obj) -> list:
    if not dist.is_initialized():
        return [obj]
    out = [None] * dist.get_world_size()
    dist.all_gather_object(out, obj)
    return out


def report(
    meter: TrialMeter,
    plan: EpochPlan,
    allreduce_probe_ms: float | None,
    trainable_params: int,
    compute: ComputeRate,
    rank: int,
    device,
    final: bool,
    trial: RankTrial,
    compiling: CompileDecision,
    checkpoint: ray.train.Checkpoint | None,
    skipped_files: int | None = None,
) -> None:
    """Every rank reports (Ray Train expects it); rank 0's metrics carry all ranks' reports to Tune."""
    ranks = gather(meter.rank_report(rank, node_name(), device_name(device), peak_memory_gib(device)))
    epoch = meter.epochs[-1]
    summary = meter.trial_report(
        plan.samples_per_epoch,
        plan.steps_per_epoch * len(meter.epochs),
        allreduce_probe_ms,
        compute,
        trial.attempt,
        trial.worker_group,
    )
    summary.joules_per_sample = joules_per_sample([r.energy_j for r in ranks], meter.timed_samples)
    summary.trainable_params = trainable_params
    summary.compiled, summary.compile_reason = compiling.compiled, compiling.reason
    summary.skipped_files = skipped_files
    ray.train.report(
        {
            TRIAL_ID_KEY: trial.trial_id,
            "epoch": epoch.epoch,
            "throughput": summary.throughput,
            "train_loss": epoch.train_loss,
            "val_accuracy": epoch.val_accuracy,
            "final": final,
            EPOCH_KEY: asdict(meter.epoch_report(epoch)),
            TRIAL_KEY: asdict(summary),
            # keyed by rank so every value is a scalar that Tune's loggers can chart
            RANKS_KEY: {str(r.rank): asdict(r) for r in ranks},
        },
        checkpoint=checkpoint,
    )
