"""ViT-B/16 with its class token (8 input channels, patch 16) at micro batch 1 on one GPU: the largest square
image side that trains, with and without activation checkpointing, and throughput and peak memory at
1024, 2048 and 4096 px.

    . .whl/install.sh && python docs/results/h100-sp-resolution/run.py --out "$OUT"

The side is searched as ``--find-max-batch`` searches the micro batch (``raysweep.planning.max_batch.BatchSearch``:
doubling from 1024 px, then bisection to ``--resolution`` px), in patches per side.  Each probe builds the
model at that side (``trainers.model.models.create_model``; ``trainers.model.activation_checkpointing`` for every
block), and trains: bf16 autocast over fp32 weights with fused AdamW (the deepspeed engine's default
bf16 path), synthetic inputs, fused attention (no mask).  Sides up to 4096 px take ``WARMUP`` + ``TIMED``
steps (the figures); larger ones one timed step after the optimizer's state is made (its peak includes that
state, as every later step's does).
Doubling stops at ``--max-side`` (a step at 8192 px, 262,144 tokens, takes tens of seconds), where the
edge is then reported as at least that, beside the edge a linear fit of peak memory to tokens predicts.
The search stops early once ``--budget-s`` has elapsed (the run must finish within 8 minutes).

Writes ``$OUT/probes.csv`` (one row per probe, as each ends) and ``$OUT/summary.md`` (the tables printed).
"""

from __future__ import annotations

import argparse
import csv
import gc
import sys
import time
from dataclasses import asdict, dataclass, fields
from pathlib import Path

import torch
import torch.nn.functional as F

sys.path.insert(0, str(Path(__file__).resolve().parents[3]))

from raysweep.core.status import TrialStatus  # noqa: E402
from raysweep.planning.max_batch import BatchSearch, ProbeOutcome, SearchLimits  # noqa: E402
from trainers.model.activation_checkpointing import apply_activation_checkpointing  # noqa: E402
from trainers.model.models import create_model  # noqa: E402

MODEL = "vit_base_patch16_224"
PATCH = 16
FIGURE_SIDES = (1024, 2048, 4096)
WARMUP, TIMED = 2, 5
CLASSES = 10


@dataclass
class Probe:
    checkpointing: int
    side: int
    tokens: int
    status: str
    peak_mem_gib: float | None
    step_s: float | None
    samples_per_s: float | None
    seconds: float
    error: str = ""


def train_probe(side: int, checkpointing: int, in_chans: int) -> Probe:
    """Build ViT-B/16 at ``side`` px and train it at micro batch 1; 'oom' where it runs out of memory."""
    started = time.perf_counter()
    tokens = (side // PATCH) ** 2 + 1
    torch.cuda.empty_cache()
    torch.cuda.reset_peak_memory_stats()
    model = optimizer = None
    try:
        with torch.device("cuda"):
            model = create_model(MODEL, num_classes=CLASSES, image_size=side, in_chans=in_chans)
        apply_activation_checkpointing(model, checkpointing)
        optimizer = torch.optim.AdamW(model.parameters(), lr=1e-4, fused=True)
        x = torch.randn(1, in_chans, side, side, device="cuda")
        y = torch.randint(0, CLASSES, (1,), device="cuda")
        steps, timed_from = WARMUP + TIMED, WARMUP
        if side not in FIGURE_SIDES:
            # Above the figure sides a step takes minutes (attention is quadratic in tokens): one timed step,
            # with the optimizer's state made beforehand by a step on zero gradients, so that its memory is
            # that of every later step.
            for p in model.parameters():
                p.grad = torch.zeros_like(p)
            optimizer.step()
            optimizer.zero_grad(set_to_none=True)
            steps, timed_from = 1, 0
        for step in range(steps):
            if step == timed_from:
                torch.cuda.synchronize()
                t0 = time.perf_counter()
            with torch.autocast("cuda", dtype=torch.bfloat16):
                loss = F.cross_entropy(model(x), y)
            loss.backward()
            optimizer.step()
            optimizer.zero_grad(set_to_none=True)
        torch.cuda.synchronize()
        step_s = (time.perf_counter() - t0) / (steps - timed_from)
        peak = torch.cuda.max_memory_allocated() / 2**30
        return Probe(checkpointing, side, tokens, "completed", peak, step_s, 1 / step_s, time.perf_counter() - started)
    except torch.OutOfMemoryError as e:
        return Probe(checkpointing, side, tokens, "oom", None, None, None, time.perf_counter() - started, str(e)[:80])
    finally:
        del model, optimizer
        gc.collect()
        torch.cuda.empty_cache()


def predicted_edge(probes: list[Probe], capacity_gib: float) -> int | None:
    """The side where a least-squares line of peak memory against tokens reaches ``capacity_gib``."""
    points = [(p.tokens, p.peak_mem_gib) for p in probes if p.status == "completed" and p.side >= 1024]
    if len(points) < 2:
        return None
    n = len(points)
    mean_t, mean_m = sum(t for t, _ in points) / n, sum(m for _, m in points) / n
    slope = sum((t - mean_t) * (m - mean_m) for t, m in points) / sum((t - mean_t) ** 2 for t, _ in points)
    if slope <= 0:
        return None
    tokens = mean_t + (capacity_gib - mean_m) / slope
    return int((max(tokens, 0) ** 0.5) * PATCH) // PATCH * PATCH


def search(checkpointing: int, args: argparse.Namespace, deadline: float, log) -> tuple[BatchSearch, list[Probe]]:
    """Doubling then bisection over the side in patches, as ``--find-max-batch`` searches the micro batch."""
    limits = SearchLimits(max_probes=12, max_micro_batch=args.max_side // PATCH, resolution=args.resolution // PATCH)
    edge = BatchSearch(start=args.start_side // PATCH, limits=limits)
    probes = []
    while (patches := edge.next_batch()) is not None and time.perf_counter() < deadline:
        probe = train_probe(patches * PATCH, checkpointing, args.in_chans)
        probes.append(probe)
        log(probe)
        edge.record(
            patches,
            ProbeOutcome(TrialStatus(probe.status), probe.peak_mem_gib, probe.samples_per_s, probe.error or None),
        )
    return edge, probes


def markdown(rows: list[list[str]], header: list[str]) -> str:
    lines = ["| " + " | ".join(header) + " |", "|" + "---:|" * len(header)]
    return "\n".join(lines + ["| " + " | ".join(r) + " |" for r in rows])


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--out", type=Path, required=True, help="folder for probes.csv and summary.md")
    parser.add_argument("--in-chans", type=int, default=8)
    parser.add_argument("--max-side", type=int, default=8192, help="doubling stops here (px)")
    parser.add_argument("--resolution", type=int, default=256, help="bisection stops within this many px")
    parser.add_argument("--budget-s", type=float, default=420.0, help="no probe starts after this many seconds")
    parser.add_argument("--start-side", type=int, default=FIGURE_SIDES[0], help="the first side probed (px)")
    parser.add_argument(
        "--checkpointing", default="0,1", help="comma-separated: 0 (off), 1 (every block); searched in this order"
    )
    args = parser.parse_args(argv)
    args.out.mkdir(parents=True, exist_ok=True)
    started = time.perf_counter()
    deadline = started + args.budget_s
    device = torch.cuda.get_device_name()
    capacity = torch.cuda.get_device_properties(0).total_memory / 2**30
    print(f"{device}, {capacity:.1f} GiB; torch {torch.__version__}; {MODEL}, in_chans={args.in_chans}", flush=True)

    on = {"device": device, "capacity_gib": round(capacity, 2), "torch": torch.__version__}
    columns = [*(column.name for column in fields(Probe)), *on]
    with open(args.out / "probes.csv", "w", newline="") as f:
        csv.DictWriter(f, fieldnames=columns).writeheader()

    def log(p: Probe) -> None:
        """Print the probe and append it to probes.csv: a probe of minutes is kept if a later one is cut off."""
        mem = f"{p.peak_mem_gib:.2f} GiB" if p.peak_mem_gib is not None else "-"
        rate = f"{p.samples_per_s:.3f} img/s" if p.samples_per_s else "-"
        print(f"  checkpointing={p.checkpointing} {p.side:>5} px {p.tokens:>7} tokens: {p.status} {mem} {rate} "
              f"({p.seconds:.0f} s)", flush=True)  # fmt: skip
        with open(args.out / "probes.csv", "a", newline="") as f:
            csv.DictWriter(f, fieldnames=columns).writerow({**asdict(p), **on})

    every: list[Probe] = []
    edges = {}
    for checkpointing in (int(c) for c in args.checkpointing.split(",")):
        edge, probes = search(checkpointing, args, deadline, log)
        every += probes
        edges[checkpointing] = (edge, predicted_edge(probes, capacity))

    figures = []
    for side in FIGURE_SIDES:
        for checkpointing in (0, 1):
            p = next((p for p in every if p.side == side and p.checkpointing == checkpointing), None)
            if p is None:
                continue
            measured = ["-"] * 3
            if p.status == "completed":
                measured = [f"{p.samples_per_s:.3f}", f"{p.step_s * 1000:.0f}", f"{p.peak_mem_gib:.2f}"]
            figures.append([str(side), f"{p.tokens:,}", "every block" if checkpointing else "off", p.status, *measured])
    edge_rows = []
    for checkpointing, (edge, predicted) in edges.items():
        fit, oom = edge.largest_fit, edge.first_oom
        capped = oom is None and fit is not None and fit * PATCH >= args.max_side
        edge_rows.append([
            "every block" if checkpointing else "off",
            f"{fit * PATCH}" + (" (cap)" if capped else "") if fit else "-",
            f"{oom * PATCH}" if oom else "-",
            f"{predicted}" if predicted else "-",
            str(len(edge.outcomes)),
        ])  # fmt: skip
    summary = "\n\n".join(
        [
            f"{device} ({capacity:.1f} GiB), torch {torch.__version__}, {MODEL} in_chans={args.in_chans}, "
            f"micro batch 1, bf16 autocast, fused AdamW; {time.perf_counter() - started:.0f} s",
            markdown(
                figures, ["side (px)", "tokens", "checkpointing", "status", "img/s", "step (ms)", "peak memory (GiB)"]
            ),
            markdown(
                edge_rows,
                [
                    "checkpointing",
                    "largest side trained (px)",
                    "first side out of memory (px)",
                    "predicted edge, linear fit (px)",
                    "probes",
                ],
            ),  # fmt: skip
        ]
    )
    (args.out / "summary.md").write_text(summary + "\n")
    print(summary, flush=True)
    return 0


if __name__ == "__main__":
    sys.exit(main())
