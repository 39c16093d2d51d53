"""Where one training step of hand-written ViT-B/16 goes on one GPU: device time by kind of kernel, the FLOPs each
kind does and the rate it reaches, and the time no kernel runs.

    . .whl/install.sh && python docs/results/h100-step-profile/profile_step.py --out "$OUT"

The step is ``raysweep.bench.stack.plain_training_step`` (bf16 autocast, fused AdamW, clipping; the bench's
hand-written loop), compiled in torch.compile's default mode: CUDA graphs (``reduce-overhead``) would hide
the kernels from the profiler and only remove launch gaps, which show here as time without a kernel. After
a warm-up (the compile), ``--steps`` steps are timed with CUDA events, then ``--profiled`` steps run under
``torch.profiler`` and every kernel's device time is put in one kind by its name (``KINDS``). FLOPs come
from one eager step under ``torch.utils.flop_counter.FlopCounterMode`` (matrix products and attention; the
compiled step does the same arithmetic). The matrix ceiling is ``raysweep.bench.stack.matmul_ceiling_tflops``
(an 8192^3 bf16 matmul on this card).

Writes ``$OUT/summary.csv`` (one row per kind, the step's own figures on every row) and ``$OUT/kernels.txt``
(the profiler's table of the 40 longest kernels).
"""

from __future__ import annotations

import argparse
import csv
import statistics
import sys
from pathlib import Path

import torch
from torch.profiler import ProfilerActivity, profile
from torch.utils.flop_counter import FlopCounterMode

sys.path.insert(0, str(Path(__file__).resolve().parents[3]))

from raysweep.bench.stack import matmul_ceiling_tflops, plain_training_step  # noqa: E402

# A kernel's kind: the first whose name contains one of the words (lower case). Order matters: attention
# kernels are matrix products too, and inductor names its fused kernels triton_*.
KINDS = (
    ("attention", ("flash", "fmha", "attention", "sdpa", "cudnn_generated")),
    ("matrix product", ("gemm", "cutlass", "nvjet", "xmma", "cublas", "matmul", "sm90_", "sm80_")),
    ("optimizer and clipping", ("adam", "multi_tensor", "foreach", "norm_kernel")),
    ("fused elementwise and norms (triton)", ("triton",)),
    ("copies and fills", ("memcpy", "memset", "copy", "fill")),
)
OTHER = "other"
# The aten ops whose FLOPs go to each kind.
FLOP_KINDS = {"attention": ("attention",), "matrix product": ("mm", "addmm", "bmm", "baddbmm")}


def kind_of(kernel: str) -> str:
    name = kernel.lower()
    return next((kind for kind, words in KINDS if any(w in name for w in words)), OTHER)


def flops_by_kind(model: str, batch: int) -> dict[str, float]:
    """FLOPs of one eager step, summed per kind of kernel that does them."""
    step = plain_training_step(model, batch, "eager")
    step()  # the optimizer's state is made outside the count
    with FlopCounterMode(display=False) as counter:
        step()
    flops = {kind: 0.0 for kind in FLOP_KINDS}
    for op, count in counter.get_flop_counts()["Global"].items():
        name = str(op).split(".")[1] if "." in str(op) else str(op)
        for kind, words in FLOP_KINDS.items():
            if ("attention" in name and "attention" in words) or name in words:
                flops[kind] += count
    return flops


def timed_step_ms(step, steps: int, repeats: int = 3) -> list[float]:
    """Milliseconds a step, from CUDA events over ``steps`` steps, ``repeats`` times."""
    out = []
    for _ in range(repeats):
        start, end = torch.cuda.Event(enable_timing=True), torch.cuda.Event(enable_timing=True)
        start.record()
        for _ in range(steps):
            step()
        end.record()
        torch.cuda.synchronize()
        out.append(start.elapsed_time(end) / steps)
    return out


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--out", type=Path, required=True)
    parser.add_argument("--model", default="vit_base_patch16_224")
    parser.add_argument("--batch", type=int, default=256)
    parser.add_argument("--steps", type=int, default=20, help="steps per timed window (3 windows)")
    parser.add_argument("--profiled", type=int, default=3, help="steps under the profiler")
    args = parser.parse_args(argv)
    if not torch.cuda.is_available():
        raise SystemExit("profile_step: needs a GPU")
    args.out.mkdir(parents=True, exist_ok=True)
    device, ceiling = torch.cuda.get_device_name(), matmul_ceiling_tflops()
    flops = flops_by_kind(args.model, args.batch)

    step = plain_training_step(args.model, args.batch, "default")
    for _ in range(5):  # the compile, then steady steps
        step()
    torch.cuda.synchronize()
    windows = timed_step_ms(step, args.steps)
    step_ms = statistics.median(windows)

    with profile(activities=[ProfilerActivity.CPU, ProfilerActivity.CUDA]) as prof:
        for _ in range(args.profiled):
            step()
        torch.cuda.synchronize()
    (args.out / "kernels.txt").write_text(prof.key_averages().table(sort_by="self_device_time_total", row_limit=40))
    device_ms: dict[str, float] = {}
    launches: dict[str, int] = {}
    for event in prof.events():
        if event.device_type != torch.autograd.DeviceType.CUDA:
            continue
        kind = kind_of(event.name)
        device_ms[kind] = device_ms.get(kind, 0.0) + event.time_range.elapsed_us() / 1000 / args.profiled
        launches[kind] = launches.get(kind, 0) + 1
    busy_ms = sum(device_ms.values())

    on_every_row = {
        "device": device,
        "torch": torch.__version__,
        "model": args.model,
        "batch": args.batch,
        "compile_mode": "default",
        "step_ms": round(step_ms, 3),
        "step_ms_min": round(min(windows), 3),
        "step_ms_max": round(max(windows), 3),
        "img_s": round(args.batch / step_ms * 1000, 1),
        "matmul_ceiling_tflops": round(ceiling, 1),
    }
    rows = []
    for kind in [*(k for k, _ in KINDS), OTHER, "no kernel running"]:
        ms = device_ms.get(kind, 0.0) if kind != "no kernel running" else max(step_ms - busy_ms, 0.0)
        tflop = flops.get(kind, 0.0) / 1e12
        rows.append({
            "kind": kind,
            "kernels_per_step": launches.get(kind, 0) // args.profiled,
            "device_ms_per_step": round(ms, 3),
            "share_of_step": round(ms / step_ms, 4),
            "tflop_per_step": round(tflop, 4) if tflop else "",
            "achieved_tflops": round(tflop / (ms / 1000), 1) if tflop and ms else "",
            **on_every_row,
        })  # fmt: skip
    with open(args.out / "summary.csv", "w", newline="") as f:
        writer = csv.DictWriter(f, fieldnames=list(rows[0]))
        writer.writeheader()
        writer.writerows(rows)
    print(f"{device}, torch {torch.__version__}, {args.model} at micro batch {args.batch}, compiled (default mode):")
    print(f"  step {step_ms:.2f} ms ({min(windows):.2f}-{max(windows):.2f}), {on_every_row['img_s']} img/s; "
          f"bf16 matmul ceiling {ceiling:.0f} TFLOP/s")  # fmt: skip
    for r in rows:
        rate = f", {r['achieved_tflops']} TFLOP/s" if r["achieved_tflops"] else ""
        print(f"  {r['kind']:<38} {r['device_ms_per_step']:>9.2f} ms {r['share_of_step']:>7.1%} "
              f"({r['kernels_per_step']} kernels{rate})")  # fmt: skip
    return 0


if __name__ == "__main__":
    sys.exit(main())
