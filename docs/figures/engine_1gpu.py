"""The engines on one GPU: an H200 (docs/results/h200-engine-1gpu) and an H100 (docs/results/h100-engines-1gpu)."""

from __future__ import annotations

import statistics

from . import TRIAL_HEADER, figure, listed, span, summary, table, trial_cells


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


ENGINE_NAMES = {
    "deepspeed": "DeepSpeed ZeRO-{zero_stage}",
    "ddp": "DDP",
    "accelerate": "Accelerate (DDP)",
    "fsdp": "FSDP2",
}


def h100_engine_repeats() -> dict[str, list[dict]]:
    """Each engine's trials of docs/results/h100-engines-1gpu in run order (repeat 0, 1, 2), in the space's order."""
    by_engine: dict[str, list[dict]] = {}
    for r in sorted(summary("h100-engines-1gpu"), key=lambda r: r["started_at"]):
        by_engine.setdefault(ENGINE_NAMES[r["engine"]].format(**r), []).append(r)
    return by_engine


@figure("h100-engines-1gpu")
def h100_engines_1gpu() -> str:
    body = []
    for name, trials in h100_engine_repeats().items():
        body.append(
            [
                name,
                " / ".join(f"{r['throughput']:.0f}" for r in trials),
                f"{statistics.median(r['step_time_ms'] for r in trials):.1f}",
                " / ".join(f"{r['peak_mem_gib']:.1f}" for r in trials),
                f"{statistics.median(r['joules_per_sample'] for r in trials):.3f}",
            ]
        )
    header = ["engine", "samples/s, repeats 1 / 2 / 3", "step (ms), median", "peak memory (GiB), repeats 1 / 2 / 3"]
    return table([*header, "J/sample, median"], body, "lrrrr")


@figure("h100-engines-1gpu-says")
def h100_engines_1gpu_says() -> str:
    trials = h100_engine_repeats()
    ddp, accelerate, zero0 = trials["DDP"], trials["Accelerate (DDP)"], trials["DeepSpeed ZeRO-0"]
    ratios = [a["throughput"] / d["throughput"] for a, d in zip(accelerate, ddp)]
    first = min((r for rows in trials.values() for r in rows), key=lambda r: r["started_at"])
    later = listed([r["throughput"] for r in zero0[1:]], ".0f")
    return (
        f"Accelerate, run right after DDP in each repeat, reaches {span(ratios, '.3f')}x DDP's throughput with the "
        f"same peak memory: its DDP path adds nothing measurable on one GPU. Every other comparison here is "
        f"confounded by the order: the sweep's first trial ({ENGINE_NAMES[first['engine']].format(**first)}) ran "
        f"at {first['throughput']:.0f} samples/s and its repeats at {later}; "
        f"the peak memory every trial starts from grows by "
        f"{span([b['peak_mem_gib'] - a['peak_mem_gib'] for a, b in zip(ddp, ddp[1:])], '.1f')} GiB a repeat "
        f"(DDP's trials: {listed([r['peak_mem_gib'] for r in ddp], '.1f')} GiB)."
    )
