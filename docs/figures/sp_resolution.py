"""ViT-B/16 with its class token at micro batch 1 on one H100 (docs/results/h100-sp-resolution)."""

from __future__ import annotations

import importlib.util
import sys

from . import RESULTS, figure, span, summary, table


def resolution_script():
    """The experiment's own script, whose edge rule (largest fit, linear-fit prediction) the tables reuse."""

    path = RESULTS / "h100-sp-resolution" / "run.py"
    spec = importlib.util.spec_from_file_location("h100_sp_resolution", path)
    module = importlib.util.module_from_spec(spec)
    sys.modules[spec.name] = module  # its dataclasses look their module up while they are built
    spec.loader.exec_module(module)
    return module


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
    script = resolution_script()
    rows = summary("h100-sp-resolution")
    body = []
    for every in (0, 1):
        probes = [r for r in rows if r["checkpointing"] == every]
        fitted = [r["side"] for r in probes if r["status"] == "completed"]
        oom = min((r["side"] for r in probes if r["status"] == "oom"), default=None)
        largest = max(s for s in fitted if oom is None or s < oom)
        kept = [script.Probe(**{k: r[k] for k in script.Probe.__dataclass_fields__}) for r in probes]
        predicted = script.predicted_edge(kept, probes[0]["capacity_gib"])
        body.append(
            [
                checkpointing_name(every),
                f"{largest}" if oom is not None else f"at least {largest} (the search's cap)",
                f"{oom}" if oom is not None else "none up to the cap",
                f"{predicted}" if predicted else "-",
                str(len(probes)),
            ]
        )
    header = ["checkpointing", "largest side trained (px)", "first side out of memory (px)"]
    return table([*header, "edge a linear fit of memory to tokens predicts (px)", "probes"], body, "lrrrr")


@figure("h100-sp-resolution-says")
def h100_sp_resolution_says() -> str:
    rows = {(r["checkpointing"], r["side"]): r for r in summary("h100-sp-resolution") if r["status"] == "completed"}
    off_edge = max((r for (every, _), r in rows.items() if not every), key=lambda r: r["side"])
    on_edge = max((r for (every, _), r in rows.items() if every), key=lambda r: r["side"])
    slower = [rows[1, side]["step_s"] / rows[0, side]["step_s"] for side in (1024, 2048, 4096)]
    smaller = rows[0, 4096]["peak_mem_gib"] / rows[1, 4096]["peak_mem_gib"]
    return (
        f"Without checkpointing the largest side trained is {off_edge['side']} px ({off_edge['tokens']:,} tokens, "
        f"{off_edge['peak_mem_gib']:.1f} GiB, {off_edge['step_s']:.1f} s a step). Checkpointing every block makes "
        f"a step {span(slower, '.2f')}x slower at 1024-4096 px and cuts peak memory {smaller:.1f}x at 4096 px; "
        f"with it {on_edge['side']} px ({on_edge['tokens']:,} tokens) trains in {on_edge['peak_mem_gib']:.1f} GiB "
        f"at {on_edge['step_s']:.1f} s a step."
    )
