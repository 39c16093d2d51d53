"""What DeepSpeed's gradient reduction over one rank costs a ZeRO-0 step, measured on the CPU.

    python docs/results/cpu-one-rank-reduce/measure.py --out docs/results/cpu-one-rank-reduce/summary.csv

Two engines of the same trial (``trainers.engines.build_engine``: DeepSpeed ZeRO-0, fp32, fused-free AdamW,
our clipping) in one one-rank gloo group: one as the engine builds it (no reduction with one rank), one with
DeepSpeed's reduction turned back on (``enable_backward_allreduce``, its default). ViT-B/16's 86 million
parameters at a small image and micro batch, so that the per-step cost of the gradient passes stands out
against the compute. ``--rounds`` rounds, each a window of ``--steps`` steps of each engine in turn, after
``--warmup`` steps each; prints and writes one row per engine (ms a step: median and range over the rounds)
with the difference of the medians.
"""

from __future__ import annotations

import argparse
import csv
import os
import statistics
import sys
import time
from pathlib import Path

os.environ.setdefault("DS_ACCELERATOR", "cpu")
sys.path.insert(0, str(Path(__file__).resolve().parents[3]))

import torch  # noqa: E402
import torch.distributed as dist  # noqa: E402
import torch.nn.functional as F  # noqa: E402

from raysweep.bench.floor import free_port  # noqa: E402
from raysweep.core.params import TrialParams  # noqa: E402
from trainers.engines import build_engine  # noqa: E402
from trainers.model.models import create_model  # noqa: E402


def window(engine, x, y, steps: int) -> float:
    t0 = time.perf_counter()
    for _ in range(steps):
        engine.backward(F.cross_entropy(engine(x), y))
        engine.step()
    return (time.perf_counter() - t0) / steps


def main(argv: list[str] | None = None) -> int:
    p = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    p.add_argument("--model", default="vit_base_patch16_224")
    p.add_argument("--image-size", type=int, default=32)
    p.add_argument("--batch", type=int, default=2)
    p.add_argument("--steps", type=int, default=5)
    p.add_argument("--warmup", type=int, default=2)
    p.add_argument("--rounds", type=int, default=5)
    p.add_argument("--out", type=Path)
    args = p.parse_args(argv)
    os.environ.update(MASTER_ADDR="127.0.0.1", MASTER_PORT=str(free_port()), RANK="0", WORLD_SIZE="1", LOCAL_RANK="0")
    dist.init_process_group("gloo", rank=0, world_size=1)
    torch.set_num_threads(1)  # as a rank holding one CPU
    params = TrialParams.from_dict(
        {"model": args.model, "micro_batch_per_worker": args.batch, "optimizer": "adamw", "precision": "fp32"}
    ).resolve(cluster_has_gpus=False)
    engines = {}
    for name in ("without reduction (as built)", "with DeepSpeed's reduction"):
        torch.manual_seed(0)
        model = create_model(args.model, num_classes=10, image_size=args.image_size)
        engines[name] = build_engine(params, model, torch.device("cpu"), total_steps=10**6)
    engines["with DeepSpeed's reduction"].ds.enable_backward_allreduce = True
    x = torch.randn(args.batch, 3, args.image_size, args.image_size)
    y = torch.randint(0, 10, (args.batch,))
    for engine in engines.values():
        window(engine, x, y, args.warmup)
    seconds: dict[str, list[float]] = {name: [] for name in engines}
    for _ in range(args.rounds):
        for name, engine in engines.items():
            seconds[name].append(window(engine, x, y, args.steps))
    base = statistics.median(seconds["without reduction (as built)"])
    rows = []
    for name, values in seconds.items():
        rows.append(
            {
                "engine": name,
                "step_ms": round(1000 * statistics.median(values), 1),
                "step_ms_min": round(1000 * min(values), 1),
                "step_ms_max": round(1000 * max(values), 1),
                "over_without_ms": round(1000 * (statistics.median(values) - base), 1),
                "model": args.model,
                "image_size": args.image_size,
                "batch": args.batch,
                "parameters": sum(p.numel() for p in engines[name].ds.module.parameters()),
                "rounds": args.rounds,
                "steps": args.steps,
                "torch": torch.__version__,
            }
        )
        print(" | ".join(f"{k}={v}" for k, v in rows[-1].items()), flush=True)
    if args.out:
        with open(args.out, "w", newline="") as f:
            writer = csv.DictWriter(f, fieldnames=list(rows[0]))
            writer.writeheader()
            writer.writerows(rows)
    dist.destroy_process_group()
    return 0


if __name__ == "__main__":
    sys.exit(main())
