"""How much of a compiled ViT-B/16 step is the precision of its weights and activations, on one GPU.

    . .whl/install.sh && python docs/results/h100-step-weights/probe.py --out "$OUT"

Three hand-written training steps of the same model at the same micro batch, each compiled in torch.compile's
default mode, timed side by side (``--repeats`` rounds, each round one window of ``--steps`` steps of every
variant in turn, after a warm-up that compiles):

* ``autocast``: the bench's hand-written step (``raysweep.bench.stack.plain_training_step``): fp32 weights
  under bf16 autocast, fused AdamW, clipping. timm's ViT adds its fp32 position embedding to the patch
  embedding, so the residual stream between the blocks is fp32 and every norm reads and writes it in fp32;
* ``bf16-master``: bf16 weights and activations, fp32 master weights in the optimizer (what DeepSpeed's bf16
  optimizer keeps): the bf16 gradients are copied into fp32 ones, clipped, the fused AdamW steps the masters,
  which are copied back into the bf16 weights;
* ``bf16``: bf16 weights stepped by a fused AdamW directly (no master copy): a bound on what the precision
  alone is worth, not a recipe this project trains with.

Prints one row per variant (img/s median and range over the rounds, ms a step, the dtype of the first
block's output, which is the residual stream's) and writes ``$OUT/summary.csv``.
"""

from __future__ import annotations

import argparse
import csv
import statistics
import sys
import time
from collections.abc import Callable
from pathlib import Path

import torch
import torch.nn.functional as F

sys.path.insert(0, str(Path(__file__).resolve().parents[3]))

from raysweep.bench.stack import plain_training_step  # noqa: E402
from trainers.engines.deepspeed_config import GRAD_CLIP_NORM  # noqa: E402
from trainers.model.models import create_model, native_image_size  # noqa: E402

VARIANTS = ("autocast", "bf16-master", "bf16")


def residual_dtype(model_name: str, bf16_weights: bool) -> str:
    """The dtype of the first block's output (the residual stream's) in a forward of two images: under
    autocast over fp32 weights, or with the weights in bf16."""
    dev = torch.device("cuda")
    model = create_model(model_name, num_classes=10).to(dev, torch.bfloat16 if bf16_weights else torch.float32)
    seen: list[torch.dtype] = []
    model.blocks[0].register_forward_hook(lambda module, args, out: seen.append(out.dtype))
    size = native_image_size(model_name)
    x = torch.randn(2, 3, size, size, device=dev, dtype=next(model.parameters()).dtype)
    with torch.no_grad(), torch.autocast("cuda", dtype=torch.bfloat16, enabled=not bf16_weights):
        model(x)
    return str(seen[0]).removeprefix("torch.")


def bf16_step(model_name: str, batch: int, master_weights: bool) -> Callable[[], None]:
    """A compiled training step of the model held in bf16, with or without fp32 master weights."""
    torch._dynamo.reset()
    dev = torch.device("cuda")
    size = native_image_size(model_name)
    model = create_model(model_name, num_classes=10).to(dev)
    masters = [p.detach().clone() for p in model.parameters()] if master_weights else []
    model.to(torch.bfloat16)
    params = list(model.parameters())
    for m in masters:
        m.grad = torch.zeros_like(m)
    optimizer = torch.optim.AdamW(masters or params, lr=1e-4, fused=True)
    forward = torch.compile(model)
    x = torch.randn(batch, 3, size, size, device=dev, dtype=torch.bfloat16)
    y = torch.randint(0, 10, (batch,), device=dev)

    def step() -> None:
        F.cross_entropy(forward(x).float(), y).backward()
        if master_weights:
            torch._foreach_copy_([m.grad for m in masters], [p.grad for p in params])
        torch.nn.utils.clip_grad_norm_(masters or params, GRAD_CLIP_NORM, foreach=True)
        optimizer.step()
        if master_weights:
            with torch.no_grad():
                torch._foreach_copy_(params, masters)
        model.zero_grad(set_to_none=True)

    return step


def window(step: Callable[[], None], steps: int) -> float:
    torch.cuda.synchronize()
    t0 = time.perf_counter()
    for _ in range(steps):
        step()
    torch.cuda.synchronize()
    return time.perf_counter() - t0


def main(argv: list[str] | None = None) -> int:
    p = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    p.add_argument("--model", default="vit_base_patch16_224")
    p.add_argument("--batch", type=int, default=256)
    p.add_argument("--steps", type=int, default=20)
    p.add_argument("--warmup", type=int, default=5)
    p.add_argument("--repeats", type=int, default=3)
    p.add_argument("--out", type=Path)
    args = p.parse_args(argv)
    built = {
        "autocast": plain_training_step(args.model, args.batch, "default"),
        "bf16-master": bf16_step(args.model, args.batch, master_weights=True),
        "bf16": bf16_step(args.model, args.batch, master_weights=False),
    }
    warmup_s = {name: window(step, args.warmup) for name, step in built.items()}
    seconds: dict[str, list[float]] = {name: [] for name in VARIANTS}
    for _ in range(args.repeats):
        for name, step in built.items():
            seconds[name].append(window(step, args.steps))
    device, version = torch.cuda.get_device_name(), torch.__version__
    rows = []
    for name in built:
        rates = [args.batch * args.steps / s for s in seconds[name]]
        rows.append(
            {
                "variant": name,
                "img_s": round(statistics.median(rates), 1),
                "img_s_min": round(min(rates), 1),
                "img_s_max": round(max(rates), 1),
                "step_ms": round(1000 * statistics.median(seconds[name]) / args.steps, 2),
                "residual_dtype": residual_dtype(args.model, bf16_weights=name != "autocast"),
                "warmup_s": round(warmup_s[name], 1),
                "model": args.model,
                "batch": args.batch,
                "device": device,
                "torch": version,
            }
        )
    reference = rows[0]["img_s"]
    for row in rows:
        row["over_autocast"] = round(row["img_s"] / reference, 3)
        print(" | ".join(f"{k}={v}" for k, v in row.items()), flush=True)
    if args.out:
        args.out.mkdir(parents=True, exist_ok=True)
        with open(args.out / "summary.csv", "w", newline="") as f:
            writer = csv.DictWriter(f, fieldnames=list(rows[0]))
            writer.writeheader()
            writer.writerows(rows)
    return 0


if __name__ == "__main__":
    sys.exit(main())
