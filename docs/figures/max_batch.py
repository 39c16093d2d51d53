"""--find-max-batch on an H200 (docs/results/h200-max-batch)."""

from __future__ import annotations

from . import figure, span, summary, table


def max_batch_probes() -> list[dict]:
    """The search's probe trials, in the order it ran them (probes-1, probes-2, ...)."""
    probes = [r for r in summary("h200-max-batch") if r["sweep_dir"].startswith("max_batch/probes-")]
    return sorted(probes, key=lambda r: int(r["sweep_dir"].rsplit("-", 1)[1]))


def max_batch_edge(probes: list[dict]) -> tuple[dict[int, dict], int, int, dict]:
    """The probes that fitted by micro batch, the edge, the first size out of memory above it, the sweep's trial."""
    fits = {r["micro_batch_per_worker"]: r for r in probes if r["status"] == "completed"}
    edge = max(fits)
    first_oom = min(
        r["micro_batch_per_worker"] for r in probes if r["status"] == "oom" and r["micro_batch_per_worker"] > edge
    )
    (trial,) = [r for r in summary("h200-max-batch") if r["sweep_dir"] == "."]
    return fits, edge, first_oom, trial


@figure("h200-max-batch-probes")
def h200_max_batch_probes() -> str:
    body = []
    for i, r in enumerate(max_batch_probes(), 1):
        fits = r["status"] == "completed"
        memory, speed = (f"{r['peak_mem_gib']:.1f}", f"{r['throughput']:.0f}") if fits else ("-", "-")
        body.append([str(i), str(r["micro_batch_per_worker"]), "fits" if fits else "out of memory", memory, speed])
    return table(["probe", "micro batch", "outcome", "peak memory (GiB)", "samples/s"], body, "rrlrr")


@figure("h200-max-batch-verdict")
def h200_max_batch_verdict() -> str:
    probes = max_batch_probes()
    fits, edge, first_oom, trial = max_batch_edge(probes)
    smallest = min(fits)
    return (
        f"**largest micro batch {edge}** (first out of memory at\n{first_oom}, within the 256-sample resolution), "
        f"peak {fits[edge]['peak_mem_gib']:.1f} GiB. The grid `[{smallest}]` clipped to the edge\nbecame "
        f"`[{trial['micro_batch_per_worker']}]`, and the sweep's trial there trained {trial['throughput']:.0f} "
        f"samples/s (step {trial['step_time_ms']:.0f} ms), MFU {trial['mfu']:.1%},\n"
        f"{trial['joules_per_sample']:.3f} J/sample. Peak memory grows linearly, "
        f"{fits[edge]['peak_mem_gib'] / edge:.4f} GiB per sample; throughput is flat from {smallest}\n"
        f"({fits[smallest]['throughput']:.0f} samples/s) to {edge} ({trial['throughput']:.0f})"
    )


@figure("h200-max-batch-probe-times")
def h200_max_batch_probe_times() -> str:
    probes = max_batch_probes()
    return f"{len(probes)} probes of {span([r['trial_wall_s'] for r in probes], '.0f')} s each"
