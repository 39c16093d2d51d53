"""DeepSpeed's engine (ZeRO 0-3, its bf16/fp16 engine or torch autocast) behind our engine interface.

We hold DeepSpeed's engine. Where clipping in fp32 is exact without DeepSpeed (ZeRO 0 and no DeepSpeed
bf16/fp16 engine or loss scaler), DeepSpeed's clipping is off and we clip with torch's foreach
``clip_grad_norm_`` between backward and step: DeepSpeed's own helper for that path copies two host
scalars to the device every step, and each copy waits for the whole queue of kernels. Everywhere else
DeepSpeed clips (its ZeRO and low-precision optimizers clip their own partitions, after unscaling).

On that same path with one rank in the world there is nothing to reduce, yet DeepSpeed's ZeRO-0 backward
flattens every gradient into a bucket, scales it by 1, all-reduces it over the one rank and copies it back,
each step: passes over the whole fp32 gradient and a copy per parameter. We turn off its reduction there
with its own switch (``enable_backward_allreduce``, which its pipeline engine turns off too); that is the
one attribute of DeepSpeed's engine we set.
"""

from __future__ import annotations

import sys
from collections.abc import Callable
from pathlib import Path
from types import ModuleType

import torch

from raysweep.core.params import TrialParams
from trainers.engines.compiling import compile_options, compiles
from trainers.engines.ddp import DTYPES
from trainers.engines.deepspeed_config import GRAD_CLIP_NORM, build_deepspeed_config

TAG = "engine"


def import_deepspeed() -> ModuleType:
    """``import deepspeed``, without the MLflow its autotuner imports wherever MLflow is installed.

    DeepSpeed's import reaches ``deepspeed.autotuning.autotuner``, which imports MLflow if it can, to log the
    runs of DeepSpeed's own launcher autotuning; raysweep never runs that tuner, and the import of MLflow is most
    of DeepSpeed's (about 1.2 of 1.5 s of a rank's start on 2 CPU cores).  ``sys.modules["mlflow"] = None`` makes
    ``import mlflow`` fail for that import only: the autotuner goes without it, and MLflow stays importable
    afterwards.  Where MLflow is already imported, it is left alone.
    """
    if "deepspeed" in sys.modules or "mlflow" in sys.modules:
        import deepspeed

        return deepspeed
    sys.modules["mlflow"] = None  # type: ignore[assignment]
    try:
        import deepspeed
    finally:
        if sys.modules.get("mlflow", 0) is None:
            del sys.modules["mlflow"]
    return deepspeed


def clips_outside_deepspeed(params: TrialParams) -> bool:
    """Whether the gradients at step time are the true fp32 ones, all-reduced: ZeRO 0, fp32 or bf16 autocast."""
    return params.zero_stage == 0 and (
        params.precision == "fp32" or (params.precision == "bf16" and params.uses_autocast)
    )


class DeepSpeedEngine:
    """DeepSpeed's engine, held: ``engine(x)``, ``engine.backward(loss)``, ``engine.step()`` per micro batch."""

    def __init__(
        self,
        params: TrialParams,
        model: torch.nn.Module,
        device: torch.device,
        make_optimizer: Callable[[torch.nn.Module], torch.optim.Optimizer],
        make_scheduler: Callable[[torch.optim.Optimizer], torch.optim.lr_scheduler.LRScheduler],
    ):
        deepspeed = import_deepspeed()
        model = model.to(device)
        config = build_deepspeed_config(params)
        self.clip_here = clips_outside_deepspeed(params)
        if self.clip_here:
            config["gradient_clipping"] = 0.0
        # DeepSpeed calls the schedule factory with its own optimizer and steps the schedule at each
        # accumulation boundary, after the optimizer (skipping the steps an fp16 overflow skips).
        self.ds, *_ = deepspeed.initialize(
            model=model, optimizer=make_optimizer(model), lr_scheduler=make_scheduler, config=config
        )
        if self.clip_here and torch.distributed.get_world_size() == 1:
            self.ds.enable_backward_allreduce = False
        if compiles(params):
            self.ds.compile(compile_kwargs=compile_options(params))
        self.module = self.ds
        self.input_dtype = torch.float32 if params.uses_autocast else DTYPES[params.precision]

    def __call__(self, x: torch.Tensor) -> torch.Tensor:
        return self.ds(x)

    def backward(self, loss: torch.Tensor) -> None:
        self.ds.backward(loss)

    def step(self) -> None:
        if self.clip_here and self.ds.is_gradient_accumulation_boundary():
            torch.nn.utils.clip_grad_norm_(self.ds.module.parameters(), GRAD_CLIP_NORM, foreach=True)
        self.ds.step()

    def train(self) -> None:
        self.ds.train()

    def eval(self) -> None:
        self.ds.eval()

    def save(self, directory: Path, rank: int) -> None:
        """Every rank calls it: DeepSpeed writes per-rank optimizer shards under ZeRO (and the schedule)."""
        self.ds.save_checkpoint(str(directory), tag=TAG)

    def load(self, directory: Path) -> None:
        self.ds.load_checkpoint(str(directory), tag=TAG)

    def close(self) -> None:
        """Release what keeps the trial's engine, model and optimizer alive after the trial drops them.

        ZeRO 1-3 hook every parameter's gradient accumulator with a closure over the optimizer: the
        autograd graph holds those closures where Python's garbage collector cannot see, so the
        engine, model, optimizer and their device memory outlive the trial for the process's life.
        ``destroy`` removes the hooks (and ZeRO-3's module hooks). ZeRO-3 also keeps its root module
        on a module-level stack it pushes at setup and never pops, and memoises which parameters to
        release per (coordinator, submodule) in a class-level ``lru_cache``: both hold the model.
        """
        from deepspeed.runtime.zero import parameter_offload
        from deepspeed.runtime.zero.partitioned_param_coordinator import PartitionedParameterCoordinator

        self.ds.destroy()
        stack = parameter_offload.FWD_MODULE_STACK
        stack[:] = [module for module in stack if module is not self.ds.module]
        # The cache sits inside DeepSpeed's NVTX wrapper (a closure); every coordinator of the process
        # shares it, and a worker trains one trial at a time.
        released = getattr(PartitionedParameterCoordinator, "_PartitionedParameterCoordinator__params_to_release", None)
        for cell in getattr(released, "__closure__", None) or ():
            if hasattr(cell.cell_contents, "cache_clear"):
                cell.cell_contents.cache_clear()
