"""Trial parameters: one typed record per trial, validated once, before anything starts.

Every parameter here can be an axis or a fixed value of a search space, and can be set
from the command line with ``--set key=value``.  ``resolve`` fills the ``auto`` values
from what the cluster has, and ``validate`` rejects bad values and bad combinations with
a message that names the field and what would be right.
"""

from __future__ import annotations

import dataclasses
import json
import math
from dataclasses import dataclass, field
from typing import Any

from raysweep.core.errors import UsageError
from raysweep.core.names import did_you_mean, unknown_name

# Where every trial parameter is listed, for a message about an unknown one.
PARAMETERS_LISTING = "--list-params"
PLACEMENT_STRATEGIES = ("PACK", "SPREAD", "STRICT_PACK", "STRICT_SPREAD")
DEVICES = ("auto", "cpu", "gpu")
PRECISIONS = ("auto", "fp32", "bf16", "fp16")
OPTIMIZERS = ("adamw", "sgd", "lamb")
ENGINES = ("deepspeed", "ddp", "fsdp", "accelerate", "megatron")
COMPILES = ("false", "true", "auto")
COMPILE_MODES = ("default", "reduce-overhead", "max-autotune-no-cudagraphs")
LR_SCHEDULES = ("constant", "cosine")
DECODERS = ("auto", "cpu", "gpu")
PREPARES = ("auto", "off", "pixels")
# Parameters that name a path: resolved in the driver against the caller's working directory.
PATH_PARAMS = ("data_dir",)
AMPS = ("auto", "autocast", "deepspeed")
DATA_SCALINGS = ("fixed", "per_worker")
ZERO_STAGES = (0, 1, 2, 3)
# The ZeRO stages sequence parallelism runs with: ZeRO-3 gathers a module's parameters only when that module
# runs, and the SP forward reads the position embedding outside any submodule's forward.
SP_ZERO_STAGES = (0, 1, 2)
# The engines tensor parallelism runs under: ddp (torch's tensor-parallel API over a DeviceMesh, the gradient
# mean over the data-parallel sub-mesh; CPU gloo ranks too) and megatron (megatron-core's own parallel layers).
TP_ENGINES = ("ddp", "megatron")
# What engine=megatron needs on every rank: megatron-core's layers, RNG tracker and DistributedDataParallel
# allocate on the current CUDA device (checked: megatron-core 0.16 imports on CPU but fails there).
MEGATRON_NEEDS = "CUDA GPUs and the megatron extra (pip install raysweep[megatron])"
# Synthetic data has no natural epoch: this many optimizer steps make one.
SYNTHETIC_STEPS_PER_EPOCH = 30
# datasets whose channel count is any in_chans: arrays hold their own, synthetic makes what the model takes
CHANNEL_FREE_DATASETS = ("arrays", "synthetic")

# Reference batch and base learning rate per optimizer, and how the rate scales with the
# global batch: the linear rule for SGD (Goyal et al.), the square-root rule for the
# adaptive optimizers (Hoffer et al.; You et al. for LAMB).
LR_RULES: dict[str, tuple[float, int, str]] = {
    "adamw": (1e-3, 256, "sqrt"),
    "sgd": (0.1, 256, "linear"),
    "lamb": (2e-3, 256, "sqrt"),
}


def rule_learning_rate(optimizer: str, global_batch: float) -> float:
    """The learning rate ``optimizer``'s scaling rule (``LR_RULES``) gives at ``global_batch``."""
    base, ref, rule = LR_RULES[optimizer]
    ratio = global_batch / ref
    return base * (ratio if rule == "linear" else ratio**0.5)


@dataclass
class TrialParams:
    """What one trial runs.  Field docs are shown by ``--list-params``."""

    model: str = field(default="vit_micro_patch4_32", metadata={"doc": "timm model name or raysweep preset"})
    dataset: str = field(
        default="digits", metadata={"doc": "digits | synthetic | cifar10 | cifar100 | imagefolder | arrays"}
    )
    data_dir: str = field(default="", metadata={"doc": "where cifar10/cifar100/imagefolder/arrays data lives"})
    download: bool = field(default=False, metadata={"doc": "download cifar10/cifar100 into data_dir if missing"})
    image_size: int = field(default=0, metadata={"doc": "input resolution in pixels; 0 = the model's own"})
    epochs: int = field(default=2, metadata={"doc": "passes over the training samples"})
    train_samples: int = field(default=0, metadata={"doc": "training samples per epoch; 0 = the whole split"})
    data_scaling: str = field(
        default="fixed",
        metadata={"doc": "fixed: train_samples is the total (strong scaling); per_worker: per rank (weak scaling)"},
    )
    micro_batch_per_worker: int = field(default=32, metadata={"doc": "samples per rank per forward pass"})
    global_batch: int = field(
        default=0,
        metadata={"doc": "if > 0, fixes the global batch and derives micro_batch_per_worker from it"},
    )
    grad_accum_steps: int = field(default=1, metadata={"doc": "micro batches per optimizer step"})
    num_workers: int = field(default=1, metadata={"doc": "data-parallel ranks (one GPU each on GPU clusters)"})
    placement_strategy: str = field(
        default="PACK",
        metadata={"doc": "PACK | SPREAD | STRICT_PACK (all ranks on one node) | STRICT_SPREAD (one rank per node)"},
    )
    device: str = field(default="auto", metadata={"doc": "auto (GPU if the cluster has one) | cpu | gpu"})
    cpus_per_worker: float = field(default=1.0, metadata={"doc": "logical CPUs reserved per rank"})
    precision: str = field(
        default="auto",
        metadata={"doc": "auto (bf16 on GPU, fp32 on CPU) | fp32 | bf16 | fp16 (loss scaling); bf16, fp16 need a GPU"},
    )
    amp: str = field(
        default="auto",
        metadata={
            "doc": "how DeepSpeed runs bf16/fp16: autocast (torch autocast, fp32 weights and optimizer, as plain "
            "PyTorch AMP) | deepspeed (its bf16/fp16 engine: low-precision weights, fp16 loss scaling) | "
            "auto (autocast for bf16, deepspeed for fp16)"
        },
    )
    engine: str = field(
        default="deepspeed",
        metadata={
            "doc": "deepspeed | ddp (Ray Train's prepare_model) | fsdp (PyTorch FSDP2) | accelerate (Hugging Face "
            "Accelerate's Accelerator, its DDP path) | megatron (megatron-core's transformer layers, "
            "DistributedDataParallel and distributed optimizer; CUDA GPUs only)"
        },
    )
    activation_checkpointing: int = field(
        default=0,
        metadata={
            "doc": "recompute block activations in backward instead of keeping them: 0 = off, k = every k-th "
            "transformer block (1 = every block)"
        },
    )
    reshard_after_forward: bool = field(
        default=True, metadata={"doc": "engine=fsdp: free the gathered parameters after forward (FSDP2)"}
    )
    sequence_parallel: int = field(
        default=1,
        metadata={
            "doc": "ranks that split each image's patch tokens (DeepSpeed-Ulysses); num_workers = data-parallel "
            "ranks x sequence_parallel"
        },
    )
    tensor_parallel: int = field(
        default=1,
        metadata={
            "doc": "ranks that split each block's attention heads and MLP columns (Megatron-style tensor "
            "parallelism; engine=ddp or megatron); num_workers = data-parallel ranks x tensor_parallel"
        },
    )
    zero_stage: int = field(
        default=0, metadata={"doc": "DeepSpeed ZeRO stage 0-3 (engine=deepspeed; not with optimizer=lamb)"}
    )
    optimizer: str = field(default="adamw", metadata={"doc": "adamw | sgd (Nesterov momentum 0.9) | lamb"})
    lr: float = field(
        default=0.0, metadata={"doc": "learning rate; 0 = the optimizer's scaling rule for the global batch"}
    )
    weight_decay: float = field(default=0.05, metadata={"doc": "decoupled weight decay"})
    lr_schedule: str = field(
        default="cosine",
        metadata={"doc": "constant | cosine (linear warm-up, then cosine decay to 0 over the trial's steps)"},
    )
    lr_warmup: float = field(
        default=0.05, metadata={"doc": "share of the trial's optimizer steps in linear learning-rate warm-up"}
    )
    compile: str = field(
        default="false",
        metadata={
            "doc": "torch.compile the model inside the engine: false | true | auto (GPU trials whose planned "
            "steps save more than the compile costs; the trial's compile_reason says why)"
        },
    )
    compile_mode: str = field(
        default="default",
        metadata={
            "doc": "when compiling, torch.compile's mode: default | reduce-overhead (CUDA graphs: no per-step "
            "launch and Python work, for small batches; compile=auto's choice at micro batch <= 64) | "
            "max-autotune-no-cudagraphs (searches kernels: minutes of compile per shape on a GPU)"
        },
    )
    slow_ranks: str = field(
        default="", metadata={"doc": "comma-separated ranks made artificially slower, e.g. '0' or '1,3'"}
    )
    slow_factor: float = field(
        default=0.3, metadata={"doc": "extra compute of each slow rank, as a fraction of a step's (0.3 = 30% slower)"}
    )
    max_steps_per_epoch: int = field(default=0, metadata={"doc": "cap on optimizer steps per epoch; 0 = none"})
    warmup_steps: int = field(
        default=2, metadata={"doc": "optimizer steps left out of the timing after each worker-group start"}
    )
    measure_wait: bool = field(
        default=False,
        metadata={"doc": "time each rank's wait for the others before the gradient sync (on when slow_ranks is set)"},
    )
    profile_steps: int = field(
        default=3,
        metadata={"doc": "steps profiled after the timed ones for comm_kernel_ms and comm_overlap; 0 = none"},
    )
    peak_tflops: float = field(
        default=0.0, metadata={"doc": "dense peak TFLOP/s per rank for mfu; 0 = from the table of known devices"}
    )
    memory_budget_gib: float = field(
        default=0.0,
        metadata={"doc": "CPU ranks: resident memory above this many GiB counts as out of memory; 0 = none"},
    )
    crop_scale_min: float = field(
        default=0.08, metadata={"doc": "imagefolder: RandomResizedCrop's smallest area share"}
    )
    crop_ratio_min: float = field(default=0.75, metadata={"doc": "imagefolder: RandomResizedCrop's lowest aspect"})
    crop_ratio_max: float = field(default=4 / 3, metadata={"doc": "imagefolder: RandomResizedCrop's highest aspect"})
    flip: bool = field(default=True, metadata={"doc": "random horizontal flip of training images"})
    in_chans: int = field(
        default=3,
        metadata={
            "doc": "channels the model takes: 1 (grayscale) or 3 (RGB) for image datasets; any for arrays "
            "(the arrays' own count) and synthetic"
        },
    )
    decode: str = field(
        default="auto",
        metadata={"doc": "imagefolder JPEG decode: auto (gpu on GPU ranks under 8 loader workers) | cpu | gpu"},
    )
    loader_workers: int = field(
        default=0,
        metadata={"doc": "imagefolder loader processes per rank (none for a pixel copy on a GPU); 0 = from its CPUs"},
    )
    prepare: str = field(
        default="auto",
        metadata={
            "doc": "imagefolder: auto = read a JPEG copy resized to 256 px on the short side, built once per node, "
            "where the source is larger and image_size <= 224 | off = always the source | pixels = read a copy "
            "decoded once per node into memory-mapped uint8 (no decode per trial; about 12x the JPEG's disk)"
        },
    )
    skip_bad_files: bool = field(
        default=False,
        metadata={
            "doc": "imagefolder/arrays: skip the files that cannot be read (each rank reads another in its place), "
            "counted in skipped_files; false = the first one stops the sweep, naming it"
        },
    )
    seed: int = field(default=0, metadata={"doc": "seed for data order and weights"})
    repeat: int = field(
        default=0,
        metadata={"doc": "which repeat of its point the trial is, from 0; a space's repeats set it and add it to seed"},
    )
    checkpoint_every: int = field(
        default=1, metadata={"doc": "checkpoint the engine every N epochs (trials of more than one epoch); 0 = never"}
    )
    inject_fault: str = field(
        default="",
        metadata={
            "doc": "test only: KIND@RANK:STEP makes RANK fail once at optimizer step STEP; KIND = raise|exit|oom|hang"
        },
    )

    def __post_init__(self) -> None:
        # A boolean that reaches the field without ``from_dict`` (a searcher's proposal of a choice axis,
        # ``TrialParams(compile=True)``) is the flag it spells, not a string that is always true.
        if isinstance(self.compile, bool):
            self.compile = "true" if self.compile else "false"

    # ---- derived values -------------------------------------------------------------
    @property
    def data_parallel_size(self) -> int:
        """Replicas that split the batch: ranks over the model-parallel degree (sequence or tensor)."""
        return self.num_workers // self.model_parallel_size

    @property
    def model_parallel_size(self) -> int:
        """Ranks that share one replica's samples: the sequence-parallel times the tensor-parallel degree."""
        return self.sequence_parallel * self.tensor_parallel

    @property
    def effective_micro_batch(self) -> int:
        if self.global_batch > 0:
            return self.global_batch // (self.grad_accum_steps * self.data_parallel_size)
        return self.micro_batch_per_worker

    def batch_label(self, sep: str) -> str:
        """``w2{sep}mb64{sep}acc1``: ranks, the micro batch each rank trains (resolved), accumulation steps."""
        return sep.join([f"w{self.num_workers}", f"mb{self.effective_micro_batch}", f"acc{self.grad_accum_steps}"])

    @property
    def train_batch_size(self) -> int:
        """DeepSpeed's ``train_batch_size``: micro batch x accumulation x data-parallel replicas."""
        return self.effective_micro_batch * self.grad_accum_steps * self.data_parallel_size

    def steps_per_epoch(self, num_train: int) -> int:
        """Optimizer steps of one epoch over a split of ``num_train`` samples (0: synthetic data, which has none)."""
        gb = self.train_batch_size
        if self.train_samples:
            samples = self.train_samples * (self.data_parallel_size if self.data_scaling == "per_worker" else 1)
        else:
            samples = num_train or SYNTHETIC_STEPS_PER_EPOCH * gb
        steps = max(1, samples // gb)
        return min(steps, self.max_steps_per_epoch) if self.max_steps_per_epoch else steps

    @property
    def slow_rank_list(self) -> list[int]:
        return [int(r) for r in self.slow_ranks.split(",") if r.strip()]

    @property
    def uses_autocast(self) -> bool:
        """Whether low precision comes from torch autocast over fp32 weights (not DeepSpeed's bf16/fp16 engine)."""
        if self.precision not in ("bf16", "fp16"):
            return False
        return self.amp == "autocast" or (self.amp == "auto" and self.precision == "bf16")

    @property
    def amp_mode(self) -> str:
        """What runs the low precision: none (fp32), autocast, or deepspeed (its bf16/fp16 engine)."""
        if self.precision not in ("bf16", "fp16"):
            return "none"
        return "deepspeed" if self.engine == "deepspeed" and not self.uses_autocast else "autocast"

    @property
    def learning_rate(self) -> float:
        if self.lr > 0:
            return self.lr
        return rule_learning_rate(self.optimizer, self.train_batch_size)

    # ---- construction and checks ----------------------------------------------------
    @classmethod
    def field_names(cls) -> list[str]:
        return [f.name for f in dataclasses.fields(cls)]

    @classmethod
    def from_dict(cls, values: dict[str, Any]) -> TrialParams:
        """Build from plain values (YAML, ``--set``), coercing types and naming bad fields."""
        known = {f.name: f for f in dataclasses.fields(cls)}
        unknown = sorted(set(values) - set(known))
        if unknown:
            raise UsageError(unknown_name("trial parameter", unknown[0], known, PARAMETERS_LISTING))
        kwargs = {name: coerce(name, value, type(known[name].default)) for name, value in values.items()}
        return cls(**kwargs)

    def to_dict(self) -> dict[str, Any]:
        return dataclasses.asdict(self)

    def key(self) -> str:
        """The parameters as canonical JSON: a trial row's ``params_json``, and what identifies a configuration."""
        return json.dumps(self.to_dict(), sort_keys=True)

    def resolve(self, cluster_has_gpus: bool) -> TrialParams:
        """Replace ``auto`` device and precision with what this cluster will run."""
        device = self.device if self.device != "auto" else ("gpu" if cluster_has_gpus else "cpu")
        precision = self.precision if self.precision != "auto" else ("bf16" if device == "gpu" else "fp32")
        return dataclasses.replace(self, device=device, precision=precision)

    def validate(self) -> None:
        """Raise ``UsageError`` naming the first bad field or combination."""
        for f in dataclasses.fields(self):
            value = getattr(self, f.name)
            if isinstance(value, float) and not math.isfinite(value):
                raise UsageError(f"{f.name} must be a finite number, got {value}")
        choose("placement_strategy", self.placement_strategy, PLACEMENT_STRATEGIES)
        choose("device", self.device, DEVICES)
        choose("precision", self.precision, PRECISIONS)
        choose("optimizer", self.optimizer, OPTIMIZERS)
        choose("engine", self.engine, ENGINES)
        choose("compile", self.compile, COMPILES)
        choose("compile_mode", self.compile_mode, COMPILE_MODES)
        choose("amp", self.amp, AMPS)
        choose("lr_schedule", self.lr_schedule, LR_SCHEDULES)
        choose("decode", self.decode, DECODERS)
        choose("prepare", self.prepare, PREPARES)
        positive("in_chans", self.in_chans)
        if self.in_chans not in (1, 3) and self.dataset not in CHANNEL_FREE_DATASETS:
            raise UsageError(
                f"in_chans={self.in_chans} needs dataset in {', '.join(CHANNEL_FREE_DATASETS)}; "
                f"dataset={self.dataset} is read as 8-bit images in 1 or 3 channels"
            )
        if self.activation_checkpointing < 0:
            raise UsageError(
                "activation_checkpointing must be 0 (off) or k >= 1 (every k-th block), "
                f"got {self.activation_checkpointing}"
            )
        choose("data_scaling", self.data_scaling, DATA_SCALINGS)
        choose("zero_stage", self.zero_stage, ZERO_STAGES)
        for name in (
            "epochs",
            "micro_batch_per_worker",
            "grad_accum_steps",
            "num_workers",
            "sequence_parallel",
            "tensor_parallel",
        ):
            positive(name, getattr(self, name))
        for name in (
            "image_size",
            "train_samples",
            "global_batch",
            "max_steps_per_epoch",
            "warmup_steps",
            "seed",
            "repeat",
            "profile_steps",
            "loader_workers",
        ):
            if getattr(self, name) < 0:
                raise UsageError(f"{name} must be >= 0, got {getattr(self, name)}")
        if self.cpus_per_worker <= 0:
            raise UsageError(f"cpus_per_worker must be > 0, got {self.cpus_per_worker}")
        for name in ("lr", "weight_decay", "slow_factor", "peak_tflops", "memory_budget_gib"):
            if getattr(self, name) < 0:
                raise UsageError(f"{name} must be >= 0, got {getattr(self, name)}")
        if not 0 <= self.lr_warmup < 1:
            raise UsageError(f"lr_warmup must be a share of the steps in [0, 1), got {self.lr_warmup}")
        if not 0 < self.crop_scale_min <= 1:
            raise UsageError(f"crop_scale_min must be in (0, 1], got {self.crop_scale_min}")
        if not 0 < self.crop_ratio_min <= self.crop_ratio_max:
            raise UsageError(
                f"crop_ratio_min={self.crop_ratio_min} and crop_ratio_max={self.crop_ratio_max} need "
                "0 < crop_ratio_min <= crop_ratio_max"
            )
        if self.num_workers % self.sequence_parallel:
            raise UsageError(
                f"num_workers={self.num_workers} is not a multiple of sequence_parallel={self.sequence_parallel}; "
                f"use num_workers = data-parallel ranks x {self.sequence_parallel}"
            )
        if self.tensor_parallel > 1 and self.sequence_parallel > 1:
            raise UsageError(
                f"tensor_parallel={self.tensor_parallel} with sequence_parallel={self.sequence_parallel} is not "
                "supported; set one of them to 1"
            )
        if self.num_workers % self.tensor_parallel:
            raise UsageError(
                f"num_workers={self.num_workers} is not a multiple of tensor_parallel={self.tensor_parallel}; "
                f"use num_workers = data-parallel ranks x {self.tensor_parallel}"
            )
        if self.checkpoint_every < 0:
            raise UsageError(f"checkpoint_every must be >= 0, got {self.checkpoint_every}")
        if self.inject_fault:
            parse_fault(self.inject_fault)
        if self.global_batch > 0 and self.global_batch % (self.grad_accum_steps * self.data_parallel_size):
            raise UsageError(
                f"global_batch={self.global_batch} is not divisible by grad_accum_steps x data-parallel ranks "
                f"= {self.grad_accum_steps} x {self.data_parallel_size}; pick a multiple of "
                f"{self.grad_accum_steps * self.data_parallel_size}"
            )
        try:
            _ = self.slow_rank_list
        except ValueError:
            raise UsageError(
                f"slow_ranks must be comma-separated rank numbers like '0' or '1,3', got {self.slow_ranks!r}"
            ) from None
        bad_ranks = [r for r in self.slow_rank_list if not 0 <= r < self.num_workers]
        if bad_ranks:
            raise UsageError(
                f"slow_ranks {bad_ranks} outside 0..{self.num_workers - 1} (num_workers={self.num_workers})"
            )
        if self.device == "cpu" and self.precision in ("bf16", "fp16"):
            raise UsageError(f"precision={self.precision} needs a GPU; on CPU use precision=fp32")
        if self.engine in ("ddp", "accelerate") and self.zero_stage:
            raise UsageError(f"zero_stage > 0 needs engine=deepspeed (engine={self.engine} has no ZeRO)")
        if self.optimizer == "lamb" and self.zero_stage:
            # ZeRO hands the optimizer one flat partition per parameter group, so LAMB's per-layer
            # trust ratio would silently become one ratio per group.
            raise UsageError(
                "optimizer=lamb needs zero_stage=0: ZeRO gives the optimizer flat partitions, not the layers "
                "LAMB's trust ratio is computed over; use zero_stage=0, or optimizer=adamw with ZeRO"
            )
        if self.data_scaling == "per_worker" and not self.train_samples:
            raise UsageError(
                "data_scaling=per_worker needs train_samples > 0 (samples per rank); with 0 every trial "
                "reads the whole split, whatever the worker count"
            )
        if self.precision == "fp16" and self.uses_autocast and self.zero_stage:
            raise UsageError("fp16 with amp=autocast is DeepSpeed's ZeRO-0 path only; use amp=deepspeed with ZeRO")
        if self.zero_stage == 3 and self.compile == "true":
            raise UsageError("compile=true is not supported with zero_stage=3 (parameters are partitioned)")
        if self.dataset in ("cifar10", "cifar100", "imagefolder", "arrays") and not self.data_dir:
            raise UsageError(f"dataset={self.dataset} needs data_dir (--data-dir PATH)")
        if self.engine == "fsdp":
            self.validate_fsdp()
        if self.sequence_parallel > 1:
            self.validate_sequence_parallel()
        if self.tensor_parallel > 1:
            self.validate_tensor_parallel()
        if self.engine == "megatron":
            self.validate_megatron()

    def validate_fsdp(self) -> None:
        """What the FSDP2 engine does not do, one line per field."""
        refusals = [
            (self.zero_stage > 0, f"zero_stage={self.zero_stage} needs engine=deepspeed (FSDP shards by itself)"),
            (self.precision == "fp16", "precision=fp16 is not supported with engine=fsdp (no loss scaler); use bf16"),
            (self.compile == "true", "compile=true is not supported with engine=fsdp; use compile=false or auto"),
            (
                self.sequence_parallel > 1,
                f"sequence_parallel={self.sequence_parallel} is not supported with engine=fsdp; use 1",
            ),
            (
                bool(self.slow_ranks),
                f"slow_ranks={self.slow_ranks!r} is not supported with engine=fsdp; leave it empty",
            ),
        ]
        for refused, message in refusals:
            if refused:
                raise UsageError(message)

    def validate_sequence_parallel(self) -> None:
        """What sequence parallelism runs with (engine=fsdp is refused above); the model's heads and tokens are
        checked against its shape (``trainers.model.sequence_parallel_check``)."""
        if self.engine == "deepspeed" and self.zero_stage not in SP_ZERO_STAGES:
            raise UsageError(
                f"sequence_parallel={self.sequence_parallel} supports zero_stage in {SP_ZERO_STAGES}, "
                f"got zero_stage={self.zero_stage}"
            )

    def validate_tensor_parallel(self) -> None:
        """What tensor parallelism runs with; the model's heads and widths are checked against its shape
        (``trainers.model.tensor_parallel_check``)."""
        if self.engine not in TP_ENGINES:
            raise UsageError(
                f"tensor_parallel={self.tensor_parallel} needs engine in {', '.join(TP_ENGINES)}, got "
                f"engine={self.engine}{did_you_mean(self.engine, TP_ENGINES)}"
            )
        if self.compile == "true":
            raise UsageError(f"compile=true is not supported with tensor_parallel={self.tensor_parallel}; use false")

    def validate_megatron(self) -> None:
        """What engine=megatron does not do, one line per field."""
        refusals = [
            # auto is refused too: whether the cluster has GPUs is known only once Ray has started
            (
                self.device != "gpu",
                f"engine=megatron needs {MEGATRON_NEEDS}: set device=gpu (got device={self.device}); on CPU ranks "
                "use engine=ddp",
            ),
            (
                self.zero_stage > 0,
                f"zero_stage={self.zero_stage} needs engine=deepspeed (megatron shards its "
                "optimizer state with its distributed optimizer)",
            ),
            (self.optimizer != "adamw", f"optimizer={self.optimizer} is not supported with engine=megatron; use adamw"),
            (self.precision == "fp16", "precision=fp16 is not supported with engine=megatron; use bf16 or fp32"),
            (self.compile == "true", "compile=true is not supported with engine=megatron; use compile=false"),
            (
                self.sequence_parallel > 1,
                f"sequence_parallel={self.sequence_parallel} is not supported with engine=megatron; use 1",
            ),
            (bool(self.slow_ranks), f"slow_ranks={self.slow_ranks!r} is not supported with engine=megatron"),
            (
                self.activation_checkpointing > 1,
                f"activation_checkpointing={self.activation_checkpointing} is not supported with engine=megatron "
                "(it recomputes every layer or none); use 0 or 1",
            ),
        ]
        for refused, message in refusals:
            if refused:
                raise UsageError(message)


def choose(name: str, value: Any, allowed: tuple) -> None:
    if value not in allowed:
        names = [str(a) for a in allowed]
        raise UsageError(f"{name}={value!r} is not one of {', '.join(names)}{did_you_mean(value, names)}")


def positive(name: str, value: int) -> None:
    if value <= 0:
        raise UsageError(f"{name} must be a positive integer, got {value}")


def coerce(name: str, value: Any, kind: type) -> Any:
    """Turn a YAML or command-line value into the field's type, or say which field is wrong."""
    if name == "compile":  # true | false | auto: a YAML or command-line boolean is one of the first two
        return compile_choice(value)
    if kind is bool:
        return flag(name, value)
    if kind is int:
        if isinstance(value, bool):
            raise UsageError(f"{name} must be an integer, got {value!r}")
        if isinstance(value, int):
            return value
        if isinstance(value, float) and value.is_integer():
            return int(value)
        if isinstance(value, str):
            try:
                return int(value)
            except ValueError:
                pass
        raise UsageError(f"{name} must be an integer, got {value!r}")
    if kind is float:
        if isinstance(value, (int, float)) and not isinstance(value, bool):
            return float(value)
        if isinstance(value, str):
            try:
                return float(value)
            except ValueError:
                pass
        raise UsageError(f"{name} must be a number, got {value!r}")
    if isinstance(value, (list, tuple)) and name == "slow_ranks":
        return ",".join(str(v) for v in value)
    if not isinstance(value, (str, int, float)) or isinstance(value, bool):
        raise UsageError(f"{name} must be a string, got {value!r}")
    return str(value)


def flag(name: str, value: Any) -> bool:
    if isinstance(value, bool):
        return value
    if isinstance(value, int) and value in (0, 1):
        return bool(value)
    if isinstance(value, str) and value.lower() in ("true", "false", "1", "0", "yes", "no"):
        return value.lower() in ("true", "1", "yes")
    raise UsageError(f"{name} must be true or false, got {value!r}")


def compile_choice(value: Any) -> str:
    """``compile``'s value as one of ``COMPILES`` (booleans in any spelling ``coerce`` takes for a flag)."""
    if isinstance(value, str) and value.lower() == "auto":
        return "auto"
    try:
        return "true" if flag("compile", value) else "false"
    except UsageError:
        raise UsageError(
            f"compile={value!r} is not one of {', '.join(COMPILES)}{did_you_mean(value, COMPILES)}"
        ) from None


# The test-only fault spec KIND@RANK:STEP of ``inject_fault`` as a value (trainers/faults.py fires it).
FAULT_KINDS = ("raise", "exit", "oom", "hang")


@dataclass(frozen=True)
class Fault:
    kind: str
    rank: int
    step: int


def parse_fault(spec: str) -> Fault:
    kind, _, where = spec.partition("@")
    rank, _, step = where.partition(":")
    if kind not in FAULT_KINDS or not rank.isdigit() or not step.isdigit():
        raise UsageError(
            f"inject_fault={spec!r}: expected KIND@RANK:STEP with KIND one of {', '.join(FAULT_KINDS)}, e.g. exit@1:3"
        )
    return Fault(kind, int(rank), int(step))
