"""ViT-B/16 with its class token on one H100: the largest image at micro batch 1 (docs/results/h100-sp-resolution)
and two scientific stand-ins of a real shape (docs/results/h100-scientific-standins)."""

from __future__ import annotations

from raysweep.core.status import TrialStatus
from raysweep.planning.max_batch import BatchSearch, ProbeOutcome, SearchLimits

from . import figure, span, summary, table


def edge_search(rows: list[dict], every: int) -> BatchSearch:
    """The run's search of the side (in px) for one checkpointing setting, rebuilt from its probes."""
    search = BatchSearch(start=0, limits=SearchLimits())
    for r in rows:
        if r["checkpointing"] == every:
            search.record(r["side"], ProbeOutcome(TrialStatus(r["status"]), r["peak_mem_gib"], r["samples_per_s"]))
    return search


def checkpointing_name(every: int) -> str:
    return "every block" if every else "off"


@figure("h100-sp-resolution")
def h100_sp_resolution() -> str:
    rows = [r for r in summary("h100-sp-resolution") if r["side"] in (1024, 2048, 4096)]
    body = [
        [f"{r['side']}", f"{r['tokens']:,}", checkpointing_name(r["checkpointing"]), r["status"]]
        + (
            [f"{r['samples_per_s']:.3f}", f"{r['step_s'] * 1000:.0f}", f"{r['peak_mem_gib']:.2f}"]
            if r["status"] == "completed"
            else ["-"] * 3
        )
        for r in sorted(rows, key=lambda r: (r["side"], r["checkpointing"]))
    ]
    header = ["side (px)", "tokens", "checkpointing", "status", "img/s", "step (ms)", "peak memory (GiB)"]
    return table(header, body, "rrlrrrr")


@figure("h100-sp-resolution-edge")
def h100_sp_resolution_edge() -> str:
    rows = summary("h100-sp-resolution")
    body = []
    for every in (0, 1):
        probes = [r for r in rows if r["checkpointing"] == every]
        search = edge_search(rows, every)
        largest, oom = search.largest_fit, search.first_oom
        body.append(
            [
                checkpointing_name(every),
                f"{largest}" if oom is not None else f"at least {largest} (the search's cap)",
                f"{oom}" if oom is not None else "none up to the cap",
                str(len(probes)),
            ]
        )
    header = ["checkpointing", "largest side trained (px)", "first side out of memory (px)"]
    return table([*header, "probes"], body, "lrrr")


@figure("h100-sp-resolution-says")
def h100_sp_resolution_says() -> str:
    probes = summary("h100-sp-resolution")
    rows = {(r["checkpointing"], r["side"]): r for r in probes if r["status"] == "completed"}
    off_edge, on_edge = (rows[every, edge_search(probes, every).largest_fit] for every in (0, 1))
    slower = [rows[1, side]["step_s"] / rows[0, side]["step_s"] for side in (1024, 2048, 4096)]
    smaller = rows[0, 4096]["peak_mem_gib"] / rows[1, 4096]["peak_mem_gib"]
    return (
        f"Without checkpointing the largest side trained is {off_edge['side']} px ({off_edge['tokens']:,} tokens, "
        f"{off_edge['peak_mem_gib']:.1f} GiB, {off_edge['step_s']:.1f} s a step). Checkpointing every block makes "
        f"a step {span(slower, '.2f')}x slower at 1024-4096 px and cuts peak memory {smaller:.1f}x at 4096 px; "
        f"with it {on_edge['side']} px ({on_edge['tokens']:,} tokens) trains in {on_edge['peak_mem_gib']:.1f} GiB "
        f"at {on_edge['step_s']:.1f} s a step."
    )


@figure("h100-scientific-standins")
def h100_scientific_standins() -> str:
    body = [
        [
            r["data_dir"],
            str(r["in_chans"]),
            str(r["image_size"]),
            f"{r['throughput']:.0f}",
            f"{r['step_time_ms']:.1f}",
            f"{r['peak_mem_gib']:.2f}",
            f"{r['peak_mem_gib'] / r['micro_batch_per_worker'] * 1024:.0f}",
            r["status"],
        ]
        for r in summary("h100-scientific-standins")
    ]
    header = [
        "set",
        "channels",
        "side (px)",
        "images/s",
        "step (ms)",
        "peak memory (GiB)",
        "peak per image of the batch (MiB)",
        "status",
    ]
    return table(header, body, "lrrrrrrl")
