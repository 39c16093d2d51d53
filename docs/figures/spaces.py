"""The precision, zero_stages and engine spaces on an H200 (docs/results/h200-spaces.md)."""

from __future__ import annotations

from . import figure, span, summary, table


def one_row(experiment: str, **where: object) -> dict:
    """The one trial of ``experiment``'s summary whose columns equal ``where``."""
    (row,) = [r for r in summary(experiment) if all(r[k] == v for k, v in where.items())]
    return row


PRECISIONS = {
    "bf16": "torch autocast over fp32 weights (`amp=auto`)",
    "fp16": "DeepSpeed's fp16 engine, dynamic loss scaling",
    "fp32": "full fp32 (TF32 off)",
}


def speed_row(r: dict) -> list[str]:
    return [f"{r['throughput']:.1f}", f"{r['step_time_ms']:.1f}", f"{r['peak_mem_gib']:.2f}"]


@figure("h200-precision")
def h200_precision() -> str:
    body = [[p, how, *speed_row(one_row("h200-precision", precision=p))] for p, how in PRECISIONS.items()]
    return table(["precision", "how", "samples/s", "step (ms)", "peak memory (GiB)"], body, "llrrr")


def throughput(experiment: str, **where: object) -> float:
    return one_row(experiment, **where)["throughput"]


@figure("h200-bf16-over-fp32")
def h200_bf16_over_fp32() -> str:
    return f"{throughput('h200-precision', precision='bf16') / throughput('h200-precision', precision='fp32'):.1f}x"


@figure("h200-fp16-over-bf16")
def h200_fp16_over_bf16() -> str:
    return f"{throughput('h200-precision', precision='fp16') / throughput('h200-precision', precision='bf16'):.2f}x"


@figure("h200-zero-stages")
def h200_zero_stages() -> str:
    body = [[str(stage), *speed_row(one_row("h200-zero_stages", zero_stage=stage))] for stage in range(4)]
    return table(["ZeRO stage", "samples/s", "step (ms)", "peak memory (GiB)"], body, "rrrr")


def zero_over_stage_0(*stages: int) -> str:
    base = throughput("h200-zero_stages", zero_stage=0)
    return span([throughput("h200-zero_stages", zero_stage=stage) / base for stage in stages], ".2f") + "x"


@figure("h200-zero-1-2-over-0")
def h200_zero_1_2_over_0() -> str:
    return zero_over_stage_0(1, 2)


@figure("h200-zero-3-over-0")
def h200_zero_3_over_0() -> str:
    return zero_over_stage_0(3)


ENGINES = {"ddp": "PyTorch DDP (Ray Train's `prepare_model`)", "deepspeed": "DeepSpeed (ZeRO 0, bf16 autocast)"}


@figure("h200-engine")
def h200_engine() -> str:
    body = [[label, *speed_row(one_row("h200-engine", engine=engine))] for engine, label in ENGINES.items()]
    return table(["engine", "samples/s", "step (ms)", "peak memory (GiB)"], body, "lrrr")


@figure("h200-deepspeed-cost")
def h200_deepspeed_cost() -> str:
    return f"{1 - throughput('h200-engine', engine='deepspeed') / throughput('h200-engine', engine='ddp'):.1%}"


@figure("h200-engine-loss")
def h200_engine_loss() -> str:
    (loss,) = {f"{r['final_loss']:.3f}" for r in summary("h200-engine")}  # the same arithmetic: one loss
    return loss
