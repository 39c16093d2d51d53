"""PyTorch FSDP2 (``fully_shard``) with the engine interface of DeepSpeed and DDP.

Each transformer block is one FSDP group (one all-gather of its parameters before use, one
reduce-scatter of its gradients after), and the root takes what is left (patch embedding,
norms, head). Parameters, gradients and optimizer state are sharded over all ranks, as in
DeepSpeed's ZeRO-3. In bf16 the master weights and the optimizer stay fp32: FSDP casts the
gathered parameters to bf16 for compute and reduces the gradients in fp32.
"""

from __future__ import annotations

from collections.abc import Callable
from pathlib import Path

import torch
import torch.distributed as dist
import torch.distributed.checkpoint as dcp
from torch.distributed.checkpoint.state_dict import get_state_dict, set_state_dict
from torch.distributed.device_mesh import init_device_mesh
from torch.distributed.fsdp import FSDPModule, MixedPrecisionPolicy, fully_shard

from raysweep.core.errors import UsageError
from raysweep.core.params import TrialParams
from trainers.engines.accumulation import Accumulation

# The sharded model and optimizer state (DCP files: one per rank plus rank 0's .metadata) and
# the replicated schedule state (rank 0 alone) inside the engine's checkpoint directory.
SHARDS = "fsdp"
SCHEDULE = "fsdp_schedule.pt"
PARAM_DTYPES = {"fp32": None, "bf16": torch.bfloat16}


class FSDPEngine:
    """FSDP2 over every rank: ``engine(x)``, ``engine.backward(loss)``, ``engine.step()`` per micro batch."""

    def __init__(
        self,
        params: TrialParams,
        model: torch.nn.Module,
        device: torch.device,
        make_optimizer: Callable[[torch.nn.Module], torch.optim.Optimizer],
        make_scheduler: Callable[[torch.optim.Optimizer], torch.optim.lr_scheduler.LRScheduler],
    ):
        if params.precision not in PARAM_DTYPES:
            raise UsageError(
                f"precision={params.precision!r} with engine=fsdp is not one of {', '.join(PARAM_DTYPES)} "
                "(fp16 needs loss scaling, which the fsdp engine does not do)"
            )
        if device.type == "cuda":
            torch.cuda.set_device(device)  # FSDP communicates on the current device
        param_dtype = PARAM_DTYPES[params.precision]
        policy = MixedPrecisionPolicy(param_dtype=param_dtype, reduce_dtype=torch.float32 if param_dtype else None)
        mesh = init_device_mesh(device.type, (dist.get_world_size(),))
        model = model.to(device)
        for block in transformer_blocks(model):
            fully_shard(block, mesh=mesh, mp_policy=policy, reshard_after_forward=params.reshard_after_forward)
        # The root's own parameters (embedding, final norm, head) are the first needed in backward,
        # so the root keeps them gathered after forward (fully_shard's default for the root).
        fully_shard(model, mesh=mesh, mp_policy=policy, reshard_after_forward=None)
        self.module: FSDPModule = model
        # Built after sharding, so the optimizer holds (and its state is) the ranks' shards.
        optimizer = make_optimizer(model)
        # The norm of the sharded (DTensor) gradients is the global one: the same clipping as DDP.
        self.accumulation = Accumulation(params.grad_accum_steps, model, optimizer, make_scheduler(optimizer))
        # The root casts fp32 inputs to the compute dtype itself.
        self.input_dtype = torch.float32

    def __call__(self, x: torch.Tensor) -> torch.Tensor:
        return self.module(x)

    def backward(self, loss: torch.Tensor) -> None:
        # Between boundaries the unsharded gradients accumulate locally (in fp32) and nothing
        # is reduce-scattered; the boundary's backward reduces the sum once.
        self.module.set_requires_gradient_sync(self.accumulation.at_boundary())
        self.accumulation.scaled(loss).backward()

    def step(self) -> None:
        self.accumulation.step()

    def train(self) -> None:
        self.module.train()

    def eval(self) -> None:
        self.module.eval()

    def save(self, directory: Path, rank: int) -> None:
        """Every rank writes its shards; rank 0 adds the shards' index and the schedule's state.

        Ranks may write into different local directories: merged into one (as Ray Train merges
        the ranks' checkpoint files), they make a checkpoint that ``load`` reads on every rank.
        """
        steps = self.accumulation
        model_state, optimizer_state = get_state_dict(self.module, steps.optimizer)
        dcp.save({"model": model_state, "optimizer": optimizer_state}, checkpoint_id=Path(directory) / SHARDS)
        if rank == 0:
            schedule = {"scheduler": steps.scheduler.state_dict(), "micro_steps": steps.micro_steps}
            torch.save(schedule, Path(directory) / SCHEDULE)

    def load(self, directory: Path) -> None:
        steps = self.accumulation
        model_state, optimizer_state = get_state_dict(self.module, steps.optimizer)
        state = {"model": model_state, "optimizer": optimizer_state}
        dcp.load(state, checkpoint_id=Path(directory) / SHARDS)
        set_state_dict(
            self.module, steps.optimizer, model_state_dict=state["model"], optim_state_dict=state["optimizer"]
        )
        schedule = torch.load(Path(directory) / SCHEDULE, weights_only=False)
        steps.scheduler.load_state_dict(schedule["scheduler"])
        steps.micro_steps = schedule["micro_steps"]

    def close(self) -> None:
        """Nothing outlives the trial's references to the engine: torch's hooks die with its model."""


def transformer_blocks(model: torch.nn.Module) -> list[torch.nn.Module]:
    """The model's repeated blocks: timm's ViTs (and most of its transformers) keep them in ``blocks``."""
    blocks = getattr(model, "blocks", None)
    if not isinstance(blocks, (torch.nn.Sequential, torch.nn.ModuleList)):
        raise UsageError(
            f"engine=fsdp shards a model per transformer block and {type(model).__name__} has no `blocks` "
            "list; use a timm ViT, or engine=deepspeed | ddp"
        )
    return list(blocks)
