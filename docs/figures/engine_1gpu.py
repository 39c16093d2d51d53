"""The engines on one H200 (docs/results/h200-engine-1gpu)."""

from __future__ import annotations

from . import TRIAL_HEADER, figure, span, summary, table, trial_cells


def engine_trials() -> dict[str, dict]:
    names = {("deepspeed", 0, True): "DeepSpeed ZeRO-0", ("deepspeed", 3, True): "DeepSpeed ZeRO-3"}
    names |= {("fsdp", 0, True): "FSDP2, reshard after forward", ("fsdp", 0, False): "FSDP2, no reshard"}
    trials = sorted(summary("h200-engine-1gpu"), key=lambda r: r["started_at"])
    return {names[r["engine"], r["zero_stage"], r["reshard_after_forward"]]: r for r in trials}


@figure("h200-engine-1gpu")
def h200_engine_1gpu() -> str:
    body = [[name, *trial_cells(r)] for name, r in engine_trials().items()]
    return table(["engine", *TRIAL_HEADER], body, "lrrrrrr")


@figure("h200-engine-1gpu-costs")
def h200_engine_1gpu_costs() -> str:
    trials = engine_trials()
    zero0, zero3 = trials["DeepSpeed ZeRO-0"], trials["DeepSpeed ZeRO-3"]
    fsdp = [r for name, r in trials.items() if name.startswith("FSDP2")]
    return (
        f"FSDP2 is {span([r['throughput'] / zero0['throughput'] for r in fsdp], '.2f')}x\nZeRO-0 and the cheapest "
        f"per sample ({min(r['joules_per_sample'] for r in trials.values()):.3f} J); ZeRO-3's parameter gathers "
        f"and hooks run even\nwith one rank and cost {zero3['step_time_ms'] / zero0['step_time_ms']:.1f}x the step "
        f"time and {zero3['peak_mem_gib'] - zero0['peak_mem_gib']:.1f} GiB more memory"
    )
