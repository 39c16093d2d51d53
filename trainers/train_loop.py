"""The per-worker training loop: one rank of a DeepSpeed (or DDP) data-parallel ViT trial.

``train_trial(config, resume_from)`` reads as the algorithm; reporting lives in the small helpers
below it, the measurements in their own modules (timing, warmup, straggler, flops, numerics,
comm_profile).  Everything a worker needs is in ``config``.  ``train_fn_per_worker`` runs one trial
as a Ray Train run of its own; ``trainers.trial_server`` runs trials one after another in a shared
worker group.
"""

from __future__ import annotations

from dataclasses import asdict, dataclass

import ray.train
import ray.train.torch
import torch
import torch.distributed as dist
import torch.nn.functional as F

from raysweep.core.params import TrialParams
from raysweep.core.schema import EPOCH_KEY, RANKS_KEY, TRIAL_ID_KEY, TRIAL_KEY
from trainers.activation_checkpointing import apply_activation_checkpointing
from trainers.batches import Batches, make_batches
from trainers.checkpointing import discard, restore_checkpoint, save_checkpoint
from trainers.comm_profile import ProfileWindow
from trainers.datasets import ImageData, load_dataset
from trainers.energy import EnergyWindow, energy_window, joules_per_sample
from trainers.engines import build_engine
from trainers.faults import FaultInjector
from trainers.flops import ComputeRate, peak_flops, training_flops_per_sample
from trainers.group_timeout import use_collective_timeout
from trainers.hardware import device_name, node_name, peak_memory_gib
from trainers.live_metrics import publish_epoch
from trainers.memory_budget import MemoryBudget
from trainers.meter import EpochMeasure, TrialMeter
from trainers.models import create_model, native_image_size
from trainers.numerics import gradient_reduce_dtype, set_math_modes
from trainers.sequence_parallel import apply_sequence_parallel, build_groups
from trainers.straggler import Straggler
from trainers.timing import IntervalClock, WallSpan, time_allreduce_ms
from trainers.warmup import WarmupPlan

# Synthetic data has no natural epoch: this many optimizer steps make one.
SYNTHETIC_STEPS_PER_EPOCH = 30
# The profiled window takes only steps beyond this many timed ones of the last epoch (fewer timed
# steps than this are flagged by the analysis as too few to trust).
MIN_TIMED_STEPS = 5


def train_fn_per_worker(config: dict) -> None:
    """One trial, the whole Ray Train run: a restarted worker group resumes from the run's latest checkpoint."""
    train_trial(config, ray.train.get_checkpoint())


def train_trial(config: dict, resume_from: ray.train.Checkpoint | None) -> None:
    params = TrialParams.from_dict(config["params"])
    context = ray.train.get_context()
    rank, world = context.get_world_rank(), context.get_world_size()
    device = ray.train.torch.get_device()
    torch.manual_seed(params.seed)
    set_math_modes(params.precision)
    meter = TrialMeter(world, config["trial_started_at"])
    meter.mark("worker_started")

    data = load_dataset(params.dataset, params.data_dir, params.download, params.seed)
    meter.mark("data_loaded")
    use_collective_timeout(config["collective_timeout_s"])  # before DeepSpeed and SP make their groups
    groups = build_groups(world, params.sequence_parallel)  # collective: every rank, the same order
    with torch.device(device):  # initialise the weights where they will live: seconds faster on a GPU
        model = create_model(params.model, data.num_classes, params.image_size, params.in_chans)
    num_grads = sum(p.numel() for p in model.parameters() if p.requires_grad)
    compute = ComputeRate(
        training_flops_per_sample(model), peak_flops(device_name(device), params.precision, params.peak_tflops)
    )
    model = apply_activation_checkpointing(apply_sequence_parallel(model, groups), params.activation_checkpointing)
    meter.mark("model_built")
    plan = EpochPlan.of(params, data, start_epoch=0)
    engine = build_engine(params, model, device, total_steps=plan.steps_per_epoch * params.epochs)
    meter.mark("engine_ready")
    image_size = params.image_size or native_image_size(params.model)
    batches = make_batches(params, data, device, image_size, engine.input_dtype, rank)
    if restore_checkpoint(engine, meter, resume_from):
        plan = EpochPlan.of(params, data, start_epoch=len(meter.epochs))  # warm-up again after every start
        if rank == 0:
            print(f"raysweep: resumed from checkpoint after epoch {len(meter.epochs) - 1}", flush=True)
    straggler = Straggler.of(params, rank, world, device)
    faults = FaultInjector(params.inject_fault, rank, config["fault_marker_dir"])
    budget, energy = MemoryBudget(params, device), energy_window(device)
    allreduce_probe_ms = None

    for epoch in range(len(meter.epochs), params.epochs):
        try:
            measure = train_epoch(engine, batches, plan, epoch, meter, straggler, faults, budget, energy, device)
        except torch.OutOfMemoryError as e:
            raise out_of_memory(e, rank, device) from e
        measure.val_loss, measure.val_accuracy = evaluate(engine, batches, params.effective_micro_batch, device)
        meter.epochs.append(measure)
        publish_epoch(meter, rank, peak_memory_gib(device), config["sweep"], config["trial_id"])  # live gauges
        if allreduce_probe_ms is None:
            allreduce_probe_ms = time_allreduce_ms(num_grads, gradient_reduce_dtype(params), device)
        last = epoch == params.epochs - 1
        every = params.checkpoint_every
        checkpoint = save_checkpoint(engine, meter, rank) if every and not last and (epoch + 1) % every == 0 else None
        report(
            meter,
            plan,
            allreduce_probe_ms,
            compute,
            rank,
            device,
            final=last,
            trial=config,
            checkpoint=checkpoint,
        )
        discard(checkpoint)


def out_of_memory(error: Exception, rank: int, device) -> RuntimeError:
    """Keep the peak memory seen in the message: the trials row records it for an ``oom`` trial."""
    return RuntimeError(f"OutOfMemoryError on rank {rank}: {error} (peak_mem_gib={peak_memory_gib(device):.3f})")


@dataclass
class EpochPlan:
    samples_per_epoch: int
    steps_per_epoch: int
    micro_batch: int
    accum: int
    global_batch: int
    warmup: WarmupPlan
    profile_steps: int  # profiled after the timed steps of the last epoch (0 for one rank: no collectives)
    last_epoch: int

    def profiled_steps(self, epoch: int) -> int:
        """The last steps of the last epoch, run under the profiler, after MIN_TIMED_STEPS timed ones."""
        if epoch != self.last_epoch:
            return 0
        timed = self.steps_per_epoch - self.warmup.untimed_steps(epoch)
        return max(0, min(self.profile_steps, timed - MIN_TIMED_STEPS))

    @classmethod
    def of(cls, params: TrialParams, data: ImageData, start_epoch: int) -> EpochPlan:
        """The plan of a worker group that starts training at ``start_epoch`` (after a restart: > 0)."""
        gb = params.train_batch_size
        if params.train_samples:
            samples = params.train_samples * (params.data_parallel_size if params.data_scaling == "per_worker" else 1)
        else:
            samples = data.num_train or SYNTHETIC_STEPS_PER_EPOCH * gb
        steps = max(1, samples // gb)
        if params.max_steps_per_epoch:
            steps = min(steps, params.max_steps_per_epoch)
        # A slowed rank sizes its delay on at least one untimed step (trainers.straggler).
        warmup_steps = max(params.warmup_steps, 1 if params.slow_rank_list else 0)
        warmup = WarmupPlan.after_start(warmup_steps, start_epoch, steps, params.epochs)
        profile_steps = params.profile_steps if params.num_workers > 1 else 0
        return cls(
            steps * gb,
            steps,
            params.effective_micro_batch,
            params.grad_accum_steps,
            gb,
            warmup,
            profile_steps,
            params.epochs - 1,
        )


def train_epoch(
    engine,
    batches: Batches,
    plan: EpochPlan,
    epoch: int,
    meter: TrialMeter,
    straggler: Straggler,
    faults: FaultInjector,
    budget: MemoryBudget,
    energy: EnergyWindow,
    device,
) -> EpochMeasure:
    engine.train()
    # The data clock times each batch on the device's stream: the gap covers the batch's own
    # kernels and any stall waiting for the host to produce it. (Host time alone would count
    # the host blocking on a full kernel queue, which is the model's time, not the data's.)
    step_clock, data_clock = IntervalClock(device), IntervalClock(device)
    loss_sum = torch.zeros((), device=device)
    timed, epoch_span, part = None, WallSpan(device), None
    profiled = plan.profiled_steps(epoch)
    profile = ProfileWindow(profiled, device.type == "cuda")
    micro_batches = batches.train(epoch, plan.micro_batch, plan.steps_per_epoch * plan.accum)
    for step in range(plan.steps_per_epoch):
        if timed is None and step >= plan.warmup.untimed_steps(epoch):
            timed, first_timed = WallSpan(device), step
            data_clock.drain_ms()  # warm-up batches are not counted
            straggler.calibrate(step_clock.drain_ms())  # the warm-up steps size a slow rank's delay
            energy.start()
            warmup_s = timed.t0 - epoch_span.t0
        if profiled and step == plan.steps_per_epoch - profiled:  # the timed steps are over
            part = end_of_timing(timed, step - first_timed, step_clock, data_clock, straggler, energy)
            profile.start()
        faults.maybe_fire(epoch * plan.steps_per_epoch + step)
        step_clock.start()
        for i in range(plan.accum):
            data_clock.start()
            x, y = next(micro_batches)
            data_clock.stop()
            meter.mark_first_step()
            loss = F.cross_entropy(engine(x).float(), y)
            straggler.before_backward(last_micro_batch=i == plan.accum - 1)
            engine.backward(loss)
            engine.step()
            loss_sum += loss.detach()
        step_clock.stop()
        budget.check()
    if profiled:
        profile.stop()
    elif timed:
        part = end_of_timing(timed, plan.steps_per_epoch - first_timed, step_clock, data_clock, straggler, energy)
    else:  # an epoch of warm-up only
        straggler.calibrate(step_clock.drain_ms())
        part = TimedPart(0.0, 0, [], None, 0.0, None)
    epoch_time_s = epoch_span.seconds()
    return EpochMeasure(
        epoch=epoch,
        step_ms=part.step_ms,
        wait_ms=part.wait_ms,
        data_wait_s=part.data_wait_s,
        timed_steps=part.steps,
        timed_samples=part.steps * plan.global_batch,
        timed_s=part.seconds,
        warmup_s=warmup_s if timed else epoch_time_s,
        epoch_time_s=epoch_time_s,
        train_loss=all_mean(loss_sum / (plan.steps_per_epoch * plan.accum)),
        val_loss=None,
        val_accuracy=None,
        slowdown_achieved=straggler.slowdown_achieved(part.step_ms, part.wait_ms),
        energy_j=part.energy_j,
        **profile.columns(),
    )


@dataclass
class TimedPart:
    """What the timed steps of one epoch measured."""

    seconds: float
    steps: int
    step_ms: list[float]
    wait_ms: list[float] | None
    data_wait_s: float
    energy_j: float | None


def end_of_timing(
    timed: WallSpan,
    steps: int,
    step_clock: IntervalClock,
    data_clock: IntervalClock,
    straggler: Straggler,
    energy: EnergyWindow,
) -> TimedPart:
    seconds = timed.seconds()  # synchronises: the energy counter then covers the finished steps
    energy_j = energy.stop()
    data_wait_s = sum(data_clock.drain_ms()) / 1000.0
    return TimedPart(seconds, steps, step_clock.drain_ms(), straggler.drain_wait_ms(), data_wait_s, energy_j)


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


def all_mean(value: torch.Tensor) -> float:
    if dist.is_initialized():
        value = value.clone()
        dist.all_reduce(value)
        value /= dist.get_world_size()
    return float(value)


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
    compute: ComputeRate,
    rank: int,
    device,
    final: bool,
    trial: dict,
    checkpoint: ray.train.Checkpoint | None,
) -> None:
    """Every rank reports (Ray Train expects it); rank 0's metrics carry all ranks' reports to Tune.

    ``trial`` is the worker's config: which trial this is, its attempt and its worker group.
    """
    ranks = gather(meter.rank_report(rank, node_name(), device_name(device), peak_memory_gib(device)))
    epoch = meter.epochs[-1]
    summary = meter.trial_report(
        plan.samples_per_epoch,
        plan.steps_per_epoch * len(meter.epochs),
        allreduce_probe_ms,
        compute,
        trial["attempt"],
        trial["worker_group"],
    )
    summary.joules_per_sample = joules_per_sample([r.energy_j for r in ranks], meter.timed_samples)
    ray.train.report(
        {
            TRIAL_ID_KEY: trial["trial_id"],
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
