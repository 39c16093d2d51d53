"""The per-worker training loop: one rank of a DeepSpeed (or DDP) data-parallel ViT trial.

``train_fn_per_worker(config)`` reads as the algorithm; timing, straggler emulation and
reporting live in the small helpers below it.  Everything a worker needs is in ``config``.
"""

from __future__ import annotations

from dataclasses import asdict, dataclass

import ray.train
import ray.train.torch
import torch
import torch.distributed as dist
import torch.nn.functional as F

from raysweep.params import TrialParams
from raysweep.reports import EPOCH_KEY, RANKS_KEY, TRIAL_KEY
from trainers.batches import Batches
from trainers.checkpointing import discard, restore_checkpoint, save_checkpoint
from trainers.datasets import ImageData, load_dataset
from trainers.engines import DTYPES, build_engine
from trainers.faults import FaultInjector
from trainers.hardware import device_name, node_name, peak_memory_gib
from trainers.live_metrics import publish_epoch
from trainers.meter import EpochMeasure, TrialMeter
from trainers.models import create_model, native_image_size
from trainers.timing import IntervalClock, WallSpan, time_allreduce_ms

# Synthetic data has no natural epoch: this many optimizer steps make one.
SYNTHETIC_STEPS_PER_EPOCH = 30


def train_fn_per_worker(config: dict) -> None:
    params = TrialParams.from_dict(config["params"])
    context = ray.train.get_context()
    rank, world = context.get_world_rank(), context.get_world_size()
    device = ray.train.torch.get_device()
    torch.manual_seed(params.seed)
    meter = TrialMeter(world, config["trial_started_at"])
    meter.mark("worker_started")

    data = load_dataset(params.dataset, params.data_dir, params.download, params.seed)
    meter.mark("data_loaded")
    with torch.device(device):  # initialise the weights where they will live: seconds faster on a GPU
        model = create_model(params.model, data.num_classes, params.image_size)
    num_grads = sum(p.numel() for p in model.parameters() if p.requires_grad)
    meter.mark("model_built")
    plan = EpochPlan.of(params, data)
    engine = build_engine(params, model, device, total_steps=plan.steps_per_epoch * params.epochs)
    meter.mark("engine_ready")
    image_size = params.image_size or native_image_size(params.model)
    batches = Batches(data, device, image_size, engine.input_dtype, rank, world, params.seed)
    if restore_checkpoint(engine, meter) and rank == 0:
        print(f"raysweep: resumed from checkpoint after epoch {len(meter.epochs) - 1}", flush=True)
    straggler = Straggler(params, rank, world, device)
    faults = FaultInjector(params.inject_fault, rank, config["fault_marker_dir"])
    comm_time_ms = None

    for epoch in range(len(meter.epochs), params.epochs):
        try:
            measure = train_epoch(engine, batches, plan, epoch, meter, straggler, faults, device)
        except torch.OutOfMemoryError as e:
            raise out_of_memory(e, rank, device) from e
        measure.val_loss, measure.val_accuracy = evaluate(engine, batches, params.effective_micro_batch, device)
        meter.epochs.append(measure)
        publish_epoch(
            meter, rank, peak_memory_gib(device), config["sweep"], config["trial_id"]
        )  # live gauges for the dashboard, once per epoch
        if comm_time_ms is None:
            comm_time_ms = time_allreduce_ms(num_grads, grad_dtype(params), device)
        last = epoch == params.epochs - 1
        every = params.checkpoint_every
        checkpoint = save_checkpoint(engine, meter, rank) if every and not last and (epoch + 1) % every == 0 else None
        report(meter, plan, comm_time_ms, rank, device, final=last, retries=config["attempt"], checkpoint=checkpoint)
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
    warmup_steps: int

    @classmethod
    def of(cls, params: TrialParams, data: ImageData) -> EpochPlan:
        gb = params.train_batch_size
        if params.train_samples:
            samples = params.train_samples * (params.num_workers if params.data_scaling == "per_worker" else 1)
        else:
            samples = data.num_train or SYNTHETIC_STEPS_PER_EPOCH * gb
        steps = max(1, samples // gb)
        if params.max_steps_per_epoch:
            steps = min(steps, params.max_steps_per_epoch)
        # Keep at least one timed step, whatever the warm-up asks for.
        warmup = min(params.warmup_steps, steps * params.epochs - 1)
        return cls(steps * gb, steps, params.effective_micro_batch, params.grad_accum_steps, gb, warmup)


def train_epoch(
    engine, batches: Batches, plan: EpochPlan, epoch: int, meter: TrialMeter, straggler, faults, device
) -> EpochMeasure:
    engine.train()
    # The data clock times each batch on the device's stream: the gap covers the batch's own
    # kernels and any stall waiting for the host to produce it. (Host time alone would count
    # the host blocking on a full kernel queue, which is the model's time, not the data's.)
    step_clock, data_clock = IntervalClock(device), IntervalClock(device)
    loss_sum = torch.zeros((), device=device)
    timed, epoch_span = None, WallSpan(device)
    micro_batches = batches.train(epoch, plan.micro_batch, plan.steps_per_epoch * plan.accum)
    for step in range(plan.steps_per_epoch):
        if timed is None and epoch * plan.steps_per_epoch + step >= plan.warmup_steps:
            timed, first_timed = WallSpan(device), step
            data_clock.drain_ms()  # warm-up batches are not counted
            warmup_s = timed.t0 - epoch_span.t0
        faults.maybe_fire(epoch * plan.steps_per_epoch + step)
        if timed:
            step_clock.start()
        for i in range(plan.accum):
            data_clock.start()
            x, y = next(micro_batches)
            data_clock.stop()
            meter.mark_first_step()
            loss = F.cross_entropy(engine(x).float(), y)
            if i == plan.accum - 1:
                straggler.before_gradient_sync(engine, x, timed is not None)
            engine.backward(loss)
            engine.step()
            loss_sum += loss.detach()
        if timed:
            step_clock.stop()
    timed_s = timed.seconds() if timed else 0.0
    epoch_time_s = epoch_span.seconds()
    timed_steps = plan.steps_per_epoch - first_timed if timed else 0
    return EpochMeasure(
        epoch=epoch,
        step_ms=step_clock.drain_ms(),
        wait_ms=straggler.wait_clock.drain_ms(),
        data_wait_s=sum(data_clock.drain_ms()) / 1000.0 if timed else 0.0,
        timed_samples=timed_steps * plan.global_batch,
        timed_s=timed_s,
        warmup_s=warmup_s if timed else epoch_time_s,
        epoch_time_s=epoch_time_s,
        train_loss=all_mean(loss_sum / (plan.steps_per_epoch * plan.accum)),
        val_loss=None,
        val_accuracy=None,
    )


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


class Straggler:
    """Emulates a slower device on chosen ranks and times how long each rank waits for the others.

    A slow rank repeats part of its forward pass (``slow_factor`` of a step's compute, a
    forward being about a third of it); every rank then meets the others in a one-element
    all-reduce just before the gradient synchronisation, and the time spent there is its wait.
    """

    def __init__(self, params: TrialParams, rank: int, world: int, device: torch.device):
        self.slow_factor = params.slow_factor if rank in params.slow_rank_list else 0.0
        self.world = world
        self.wait_clock = IntervalClock(device)
        self.token = torch.zeros(1, device=device)

    def before_gradient_sync(self, engine, x: torch.Tensor, timed: bool) -> None:
        if self.slow_factor:
            with torch.no_grad():
                extra = int(round(3 * self.slow_factor * len(x)))
                for start in range(0, extra, len(x)):
                    engine(x[: min(len(x), extra - start)])
        if self.world > 1:
            if timed:
                self.wait_clock.start()
            dist.all_reduce(self.token)
            if timed:
                self.wait_clock.stop()


def grad_dtype(params: TrialParams) -> torch.dtype:
    return DTYPES[params.precision]


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
    comm_time_ms: float,
    rank: int,
    device,
    final: bool,
    retries: int,
    checkpoint: ray.train.Checkpoint | None,
) -> None:
    """Every rank reports (Ray Train expects it); rank 0's metrics carry all ranks' reports to Tune."""
    ranks = gather(meter.rank_report(rank, node_name(), device_name(device), peak_memory_gib(device)))
    epoch = meter.epochs[-1]
    trial = meter.trial_report(plan.samples_per_epoch, plan.steps_per_epoch * len(meter.epochs), comm_time_ms, retries)
    ray.train.report(
        {
            "epoch": epoch.epoch,
            "throughput": trial.throughput,
            "train_loss": epoch.train_loss,
            "val_accuracy": epoch.val_accuracy,
            "final": final,
            EPOCH_KEY: asdict(meter.epoch_report(epoch)),
            TRIAL_KEY: asdict(trial),
            # keyed by rank so every value is a scalar that Tune's loggers can chart
            RANKS_KEY: {str(r.rank): asdict(r) for r in ranks},
        },
        checkpoint=checkpoint,
    )
