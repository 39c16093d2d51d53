"""megatron-core as an engine: the trial's timm ViT rebuilt from megatron-core's transformer layers, trained
through its ``DistributedDataParallel`` and distributed optimizer (AdamW), tensor-parallel over
``tensor_parallel`` ranks. CUDA GPUs only (``raysweep.core.params.MEGATRON_NEEDS``; the driver refuses CPU
trials before Ray starts); the optional extra ``raysweep[megatron]`` installs megatron-core.

The same model and updates as engine=ddp: the timm model the loop built from the trial's seed is copied into
megatron's layers (``megatron_weights``: the ``get_vit_layer_with_local_spec`` layer without a causal mask,
LayerNorm eps 1e-6, exact GELU, biases on qkv, proj and the MLP; patch embedding, class token, position
embedding, final norm and head replicated), so step 0 starts from the same weights; AdamW with timm's betas
and eps, no weight decay on biases, norms, class token and position embedding (timm's groups); the gradient
mean over the data-parallel ranks, clipped at ``GRAD_CLIP_NORM`` over the global norm (megatron counts a
replicated parameter once); the LR schedule of the other engines on the optimizer's parameter groups.
bf16 is megatron's own (bf16 weights in ``Float16Module``, fp32 main weights in the distributed optimizer),
as DeepSpeed's bf16 engine, not autocast over fp32 weights.
"""

from __future__ import annotations

from collections.abc import Callable
from contextlib import nullcontext
from pathlib import Path

import torch
from torch import nn

from raysweep.core.params import MEGATRON_NEEDS, TrialParams
from trainers.engines.deepspeed_config import GRAD_CLIP_NORM

# timm's VisionTransformer: LayerNorm eps, and AdamW's defaults in timm's create_optimizer_v2.
TIMM_LAYERNORM_EPS = 1e-6
ADAMW_BETAS = (0.9, 0.999)
ADAMW_EPS = 1e-8
# Parameters timm keeps out of weight decay besides biases and 1-D ones (VisionTransformer.no_weight_decay).
NO_DECAY_NAMES = ("*cls_token", "*pos_embed")


def qkv_rows_for_megatron(t: torch.Tensor, num_heads: int) -> torch.Tensor:
    """timm's qkv rows (q|k|v, head, dim) in megatron's order (head, q|k|v, dim): one query group per head, so a
    contiguous shard of ``linear_qkv`` is q, k and v of whole heads."""
    return t.reshape(3, num_heads, -1, *t.shape[1:]).transpose(0, 1).reshape(t.shape)


def megatron_weights(timm_state: dict[str, torch.Tensor], num_heads: int, tp: int, tp_rank: int) -> dict:
    """This TP rank's megatron state (``MegatronViT`` names) from a timm ViT's ``state_dict``.

    Column-parallel layers (``linear_qkv``, ``linear_fc1``) keep rows ``tp_rank`` of ``tp``, row-parallel ones
    (``linear_proj``, ``linear_fc2``) columns; their biases: rows for column-parallel, whole for row-parallel.
    """

    def rows(t: torch.Tensor) -> torch.Tensor:
        return t.chunk(tp, dim=0)[tp_rank].clone()

    def columns(t: torch.Tensor) -> torch.Tensor:
        return t.chunk(tp, dim=1)[tp_rank].clone()

    out = {
        "patch_embed.weight": timm_state["patch_embed.proj.weight"],
        "patch_embed.bias": timm_state["patch_embed.proj.bias"],
        "pos_embed": timm_state["pos_embed"],
        "decoder.final_layernorm.weight": timm_state["norm.weight"],
        "decoder.final_layernorm.bias": timm_state["norm.bias"],
        "head.weight": timm_state["head.weight"],
        "head.bias": timm_state["head.bias"],
    }
    if "cls_token" in timm_state:
        out["cls_token"] = timm_state["cls_token"]
    depth = len({k.split(".")[1] for k in timm_state if k.startswith("blocks.")})
    for i in range(depth):
        b, m = f"blocks.{i}.", f"decoder.layers.{i}."
        out |= {
            m + "input_layernorm.weight": timm_state[b + "norm1.weight"],
            m + "input_layernorm.bias": timm_state[b + "norm1.bias"],
            m + "self_attention.linear_qkv.weight": rows(
                qkv_rows_for_megatron(timm_state[b + "attn.qkv.weight"], num_heads)
            ),
            m + "self_attention.linear_qkv.bias": rows(
                qkv_rows_for_megatron(timm_state[b + "attn.qkv.bias"], num_heads)
            ),
            m + "self_attention.linear_proj.weight": columns(timm_state[b + "attn.proj.weight"]),
            m + "self_attention.linear_proj.bias": timm_state[b + "attn.proj.bias"],
            m + "pre_mlp_layernorm.weight": timm_state[b + "norm2.weight"],
            m + "pre_mlp_layernorm.bias": timm_state[b + "norm2.bias"],
            m + "mlp.linear_fc1.weight": rows(timm_state[b + "mlp.fc1.weight"]),
            m + "mlp.linear_fc1.bias": rows(timm_state[b + "mlp.fc1.bias"]),
            m + "mlp.linear_fc2.weight": columns(timm_state[b + "mlp.fc2.weight"]),
            m + "mlp.linear_fc2.bias": timm_state[b + "mlp.fc2.bias"],
        }
    return out


def transformer_config(params: TrialParams, vit: nn.Module):
    """megatron's ``TransformerConfig`` of the timm ViT's blocks."""
    import torch.nn.functional as F
    from megatron.core.transformer.transformer_config import TransformerConfig

    block = vit.blocks[0]
    bf16 = params.precision == "bf16"
    return TransformerConfig(
        num_layers=len(vit.blocks),
        hidden_size=int(block.attn.qkv.in_features),
        num_attention_heads=int(block.attn.num_heads),
        ffn_hidden_size=int(block.mlp.fc1.out_features),
        tensor_model_parallel_size=params.tensor_parallel,
        layernorm_epsilon=TIMM_LAYERNORM_EPS,
        activation_func=F.gelu,
        add_bias_linear=True,
        add_qkv_bias=block.attn.qkv.bias is not None,
        hidden_dropout=0.0,
        attention_dropout=0.0,
        bf16=bf16,
        params_dtype=torch.bfloat16 if bf16 else torch.float32,
        pipeline_dtype=torch.bfloat16 if bf16 else torch.float32,
        bias_dropout_fusion=False,
        gradient_accumulation_fusion=False,
        # activation_checkpointing=1: every layer recomputed in the backward, as the other engines' blocks
        **(
            {"recompute_granularity": "full", "recompute_method": "uniform", "recompute_num_layers": 1}
            if params.activation_checkpointing
            else {}
        ),
    )


class MegatronViT(nn.Module):
    """A ViT whose blocks are megatron-core's ``TransformerBlock`` (sequence first: [tokens, batch, width]);
    patch embedding, class token, position embedding and head are plain replicated torch modules."""

    def __init__(self, config, vit: nn.Module):
        from megatron.core.models.vision.vit_layer_specs import get_vit_layer_with_local_spec
        from megatron.core.transformer.enums import AttnMaskType
        from megatron.core.transformer.transformer_block import TransformerBlock

        super().__init__()
        embed = vit.patch_embed.proj
        self.patch_embed = nn.Conv2d(embed.in_channels, embed.out_channels, embed.kernel_size, embed.stride)
        self.cls_token = nn.Parameter(torch.zeros_like(vit.cls_token)) if vit.cls_token is not None else None
        self.pos_embed = nn.Parameter(torch.zeros_like(vit.pos_embed))
        self.global_pool = vit.global_pool
        self.num_prefix_tokens = int(vit.num_prefix_tokens)
        spec = get_vit_layer_with_local_spec()
        spec.submodules.self_attention.params = {"attn_mask_type": AttnMaskType.no_mask}  # images attend both ways
        self.decoder = TransformerBlock(config, spec, post_layer_norm=True)
        self.head = nn.Linear(vit.head.in_features, vit.head.out_features)

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        x = self.patch_embed(x).flatten(2).transpose(1, 2)  # [batch, patches, width]
        if self.cls_token is not None:
            x = torch.cat([self.cls_token.expand(x.shape[0], -1, -1), x], dim=1)
        x = x + self.pos_embed
        x = self.decoder(x.transpose(0, 1).contiguous(), attention_mask=None).transpose(0, 1)
        pooled = x[:, 0] if self.global_pool == "token" else x[:, self.num_prefix_tokens :].mean(dim=1)
        return self.head(pooled)


def check_convertible(vit: nn.Module) -> None:
    """The timm ViT parts ``MegatronViT`` reproduces; anything else would train another model."""
    from raysweep.core.errors import UsageError

    unsupported = [
        name
        for name in ("norm_pre", "fc_norm", "patch_drop", "head_drop")
        if not isinstance(getattr(vit, name, nn.Identity()), (nn.Identity, nn.Dropout))
    ]
    if getattr(vit, "reg_token", None) is not None or getattr(vit, "attn_pool", None) is not None:
        unsupported.append("register tokens or attention pooling")
    if getattr(vit, "global_pool", "") not in ("token", "avg"):
        unsupported.append(f"global_pool={vit.global_pool!r}")
    if unsupported:
        raise UsageError(f"engine=megatron rebuilds a plain timm ViT; {', '.join(unsupported)} is not reproduced")


class MegatronEngine:
    """megatron-core's data and tensor parallelism: its DDP (gradient buffers, mean over the DP group at the
    accumulation boundary) and its distributed optimizer (AdamW state sharded over the DP group)."""

    def __init__(
        self,
        params: TrialParams,
        model: nn.Module,
        device: torch.device,
        make_optimizer: Callable[[nn.Module], torch.optim.Optimizer],
        make_scheduler: Callable[[torch.optim.Optimizer], torch.optim.lr_scheduler.LRScheduler],
    ):
        if device.type != "cuda":
            raise RuntimeError(f"engine=megatron needs {MEGATRON_NEEDS}; this rank's device is {device}")
        try:
            from megatron.core import parallel_state, tensor_parallel
            from megatron.core.distributed import DistributedDataParallel, DistributedDataParallelConfig
            from megatron.core.optimizer import OptimizerConfig, get_megatron_optimizer
        except ImportError as e:
            raise RuntimeError(f"engine=megatron needs {MEGATRON_NEEDS}: {e}") from e
        from megatron.core.optimizer import get_standard_config_overrides
        from megatron.core.optimizer.optimizer_config import ParamKey
        from megatron.core.transformer.module import Float16Module

        check_convertible(model)
        if not parallel_state.model_parallel_is_initialized():
            parallel_state.initialize_model_parallel(tensor_model_parallel_size=params.tensor_parallel)
        tensor_parallel.model_parallel_cuda_manual_seed(params.seed)
        config = transformer_config(params, model)
        tp_rank = parallel_state.get_tensor_model_parallel_rank()
        with torch.device(device):
            vit = MegatronViT(config, model)
        weights = megatron_weights(model.state_dict(), config.num_attention_heads, params.tensor_parallel, tp_rank)
        missing, unexpected = vit.load_state_dict(weights, strict=False)
        missing = [k for k in missing if not k.endswith("_extra_state")]  # megatron's per-module metadata
        if missing or unexpected:
            raise RuntimeError(f"timm -> megatron weights: missing {missing}, unexpected {unexpected}")
        vit = vit.to(device)
        module = Float16Module(config, vit) if config.bf16 else vit
        self.ddp = DistributedDataParallel(
            config,
            DistributedDataParallelConfig(grad_reduce_in_fp32=True, use_distributed_optimizer=True),
            module,
        )
        self.module = self.ddp
        optimizer_config = OptimizerConfig(
            optimizer="adam",
            lr=params.learning_rate,
            weight_decay=params.weight_decay,
            adam_beta1=ADAMW_BETAS[0],
            adam_beta2=ADAMW_BETAS[1],
            adam_eps=ADAMW_EPS,
            clip_grad=GRAD_CLIP_NORM,
            bf16=config.bf16,
            params_dtype=config.params_dtype,
            use_distributed_optimizer=True,
        )
        overrides = get_standard_config_overrides(optimizer_config)
        overrides[ParamKey(name=NO_DECAY_NAMES)] = {"wd_mult": 0.0}
        self.optimizer = get_megatron_optimizer(optimizer_config, [self.ddp], config_overrides=overrides)
        # The schedule of the other engines, on the torch optimizer(s) megatron steps.
        inner = [o.optimizer for o in getattr(self.optimizer, "chained_optimizers", [self.optimizer])]
        self.schedulers = [make_scheduler(o) for o in inner]
        self.accum = params.grad_accum_steps
        self.micro_steps = 0
        self.input_dtype = torch.float32  # Float16Module casts the inputs to bf16 itself

    def at_boundary(self) -> bool:
        return (self.micro_steps + 1) % self.accum == 0

    def __call__(self, x: torch.Tensor) -> torch.Tensor:
        return self.module(x)

    def backward(self, loss: torch.Tensor) -> None:
        with nullcontext() if self.at_boundary() else self.ddp.no_sync():
            (loss / self.accum).backward()

    def step(self) -> None:
        if self.at_boundary():
            from megatron.core.distributed import finalize_model_grads

            finalize_model_grads([self.ddp])  # the DP reduce-scatter of the gradient buffers
            self.optimizer.step()  # unscale, clip at the global norm, AdamW on the shards, all-gather the weights
            for scheduler in self.schedulers:
                scheduler.step()
            self.ddp.zero_grad_buffer()
            self.optimizer.zero_grad()
        self.micro_steps += 1

    def train(self) -> None:
        self.module.train()

    def eval(self) -> None:
        self.module.eval()

    def save(self, directory: Path, rank: int) -> None:
        """Every rank its own file: its TP shard of the weights and its DP shard of the optimizer state."""
        inner = [o.optimizer for o in getattr(self.optimizer, "chained_optimizers", [self.optimizer])]
        state = {
            "model": self.ddp.state_dict(),
            "optimizers": [o.state_dict() for o in inner],
            "schedulers": [s.state_dict() for s in self.schedulers],
            "micro_steps": self.micro_steps,
        }
        torch.save(state, Path(directory) / f"megatron_rank{rank}.pt")

    def load(self, directory: Path) -> None:
        import torch.distributed as dist

        rank = dist.get_rank() if dist.is_initialized() else 0
        state = torch.load(Path(directory) / f"megatron_rank{rank}.pt", map_location="cpu", weights_only=False)
        self.ddp.load_state_dict(state["model"])
        self.optimizer.reload_model_params()  # the fp32 main weights from the loaded ones
        inner = [o.optimizer for o in getattr(self.optimizer, "chained_optimizers", [self.optimizer])]
        for o, o_state in zip(inner, state["optimizers"]):
            o.load_state_dict(o_state)
        for s, s_state in zip(self.schedulers, state["schedulers"]):
            s.load_state_dict(s_state)
        self.micro_steps = state["micro_steps"]

    def close(self) -> None:
        """megatron's process groups are the worker's: a shared worker group's next trial reuses them only when its
        TP degree matches, so they are torn down with the trial."""
        from megatron.core import parallel_state

        parallel_state.destroy_model_parallel()
