"""The README's CPU example sweeps (docs/results/cpu-batch-grid, cpu-strong-scaling; docs/results/cpu_examples.py)."""

from __future__ import annotations

import json

from . import RESULTS, figure, summary, table


def cell(value: object, fmt: str) -> str:
    """A number formatted, or n/a where the sweep did not record the column (a sweep older than it)."""
    return "n/a" if value is None else format(value, fmt)


def run_line(experiment: str) -> str:
    """When, where and with what an experiment's sweep ran, from its sweep.json."""
    sweep = json.loads((RESULTS / experiment / "sweep.json").read_text())
    resources = sweep["cluster"]["resources"]
    gpus = f"{resources['GPU']:g} GPU(s)" if resources.get("GPU") else "no GPU"
    versions = ", ".join(f"{k} {sweep['versions'][k]}" for k in ("ray", "torch", "deepspeed", "timm", "python"))
    return f"Run on {sweep['started_at'][:10]} on a local Ray with {resources['CPU']:g} CPUs, {gpus}; {versions}."


@figure("cpu-batch-grid-run")
def cpu_batch_grid_run() -> str:
    return run_line("cpu-batch-grid")


@figure("cpu-batch-grid")
def cpu_batch_grid() -> str:
    rows = sorted(summary("cpu-batch-grid"), key=lambda r: r["micro_batch_per_worker"])
    body = [
        [
            str(r["micro_batch_per_worker"]),
            cell(r["throughput"], ".1f"),
            cell(r["step_time_ms"], ".1f"),
            cell(r["peak_mem_gib"], ".2f"),
            cell(r["val_accuracy"], ".3f"),
            cell(r["setup_s"], ".1f"),
        ]
        for r in rows
    ]
    header = ["micro batch", "samples/s", "step (ms)", "peak RSS (GiB)", "val accuracy", "setup (s)"]
    return table(header, body, "rrrrrr")


@figure("cpu-strong-scaling-run")
def cpu_strong_scaling_run() -> str:
    return run_line("cpu-strong-scaling")


@figure("cpu-strong-scaling")
def cpu_strong_scaling() -> str:
    rows = sorted(summary("cpu-strong-scaling"), key=lambda r: r["num_workers"])
    body = [
        [
            str(r["num_workers"]),
            str(r["micro_batch_per_worker"]),
            cell(r["train_time_s"], ".2f"),
            cell(r["throughput"], ".1f"),
            cell(r.get("allreduce_probe_ms"), ".2f"),
            cell(r.get("comm_kernel_ms"), ".2f"),
            cell(r.get("comm_overlap"), ".2f"),
        ]
        for r in rows
    ]
    header = ["workers", "micro batch", "train time (s)", "samples/s", "all-reduce probe (ms)"]
    return table([*header, "collective kernels per step (ms)", "overlap"], body, "rrrrrrr")
