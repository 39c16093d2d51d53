"""Every figure in README.md and docs/ that comes from a run, rendered from its experiment's committed summary.

    PYTHONPATH=. python docs/render.py            # rewrite the figure blocks in place
    PYTHONPATH=. python docs/render.py --check    # exit 1, naming the files, where a block differs

A figure is a block of the markdown between two comments, ``<!-- figure:NAME -->`` and ``<!-- /figure -->``,
whose text this script owns: it is replaced by what the function registered as NAME returns, computed from
a summary table under ``docs/results/<experiment>/`` (that experiment's README gives the command, date,
hardware and versions; its script wrote the table). ``tests/test_docs_render.py`` fails when a committed
block differs from its rendering, so a figure cannot be edited by hand nor drift from its summary.
"""

from __future__ import annotations

import argparse
import csv
import json
import re
import statistics
import sys
from collections.abc import Callable
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
RESULTS = ROOT / "docs" / "results"
DOCS = [
    ROOT / "README.md",
    *sorted((ROOT / "docs").glob("*.md")),
    *sorted(RESULTS.glob("*.md")),
    *sorted(RESULTS.glob("*/README.md")),
]
# a block on lines of its own, or inline within a sentence: <!-- figure:NAME -->0.96-0.99x<!-- /figure -->
BLOCK = re.compile(r"<!-- figure:(?P<name>[a-z0-9-]+) -->(?P<newline>\n?)(?P<body>.*?)\n?<!-- /figure -->", re.DOTALL)

FIGURES: dict[str, Callable[[], str]] = {}


def figure(name: str) -> Callable[[Callable[[], str]], Callable[[], str]]:
    """Registers a figure's renderer under the name its markdown block carries."""

    def register(render: Callable[[], str]) -> Callable[[], str]:
        FIGURES[name] = render
        return render

    return register


def summary(experiment: str) -> list[dict]:
    """An experiment's summary.csv, numbers as numbers, empty cells as None."""
    with open(RESULTS / experiment / "summary.csv", newline="") as f:
        return [{k: number(v) for k, v in row.items()} for row in csv.DictReader(f)]


def number(text: str) -> object:
    if text == "":
        return None
    if text in ("True", "False"):
        return text == "True"
    try:
        return int(text)
    except ValueError:
        pass
    try:
        return float(text)
    except ValueError:
        return text


def table(header: list[str], rows: list[list[str]], align: str) -> str:
    """A markdown table; ``align`` has one letter per column, l or r."""
    rule = "|" + "|".join("---:" if a == "r" else "---" for a in align) + "|"
    lines = ["| " + " | ".join(cells) + " |" for cells in [header, *rows]]
    return "\n".join([lines[0], rule, *lines[1:]])


def span(values: list[float], fmt: str) -> str:
    low, high = min(values), max(values)
    return format(low, fmt) if format(low, fmt) == format(high, fmt) else f"{low:{fmt}}-{high:{fmt}}"


# --- the full stack against plain PyTorch on an H200 (docs/results/h200-bench, h200-batch-grid) ---


def bench_rows(run: str, compiled: bool) -> list[dict]:
    return [r for r in summary("h200-bench") if r["run"] == run and r["compile"] == compiled]


@figure("h200-stack-overhead")
def h200_stack_overhead() -> str:
    before = {r["micro_batch_per_worker"]: r for r in summary("h200-batch-grid") if r["status"] == "completed"}
    body = []
    for r in bench_rows("compile", False):
        first = before.get(r["batch"])
        was = "" if first is None else f"{first['throughput']:.0f} ({first['throughput'] / r['plain_img_s']:.2f}x)"
        body.append(
            [str(r["batch"]), f"{r['plain_img_s']:.1f}", f"{r['stack_img_s']:.1f}", f"**{r['ratio']:.3f}**", was]
        )
    body += [
        [
            f"{r['batch']} (a second run)",
            f"{r['plain_img_s']:.1f}",
            f"{r['stack_img_s']:.1f}",
            f"**{r['ratio']:.3f}**",
            "",
        ]
        for r in bench_rows("cifar", False)
    ]
    header = ["micro batch", "plain PyTorch img/s", "full stack img/s", "ratio", "before (DeepSpeed's bf16 engine)"]
    return table(header, body, "rrrrr")


@figure("h200-stack-ratio-range")
def h200_stack_ratio_range() -> str:
    return f"{span([r['ratio'] for r in bench_rows('compile', False)], '.2f')}x"


@figure("h200-compiled")
def h200_compiled() -> str:
    (r,) = bench_rows("compile", True)
    return (
        f"**{r['stack_img_s']:.1f} img/s** at micro batch {r['batch']} (plain PyTorch compiled: "
        f"{r['plain_img_s']:.1f}, ratio {r['ratio']:.3f}). The compile time is reported apart from throughput in "
        f"`warmup_s`: {r['stack_warmup_s']:.1f} s for the warm-up steps that include compilation."
    )


@figure("h200-mfu")
def h200_mfu() -> str:
    rows = bench_rows("compile", False) + bench_rows("compile", True)
    (flops,) = {r["flops_per_sample"] for r in rows}
    (peak,) = {r["peak_flops"] for r in rows}
    (ceiling,) = {r["matmul_ceiling_tflops"] for r in rows}
    body = [
        [
            f"{r['batch']}{', compiled' if r['compile'] else ''}",
            f"{r['stack_img_s']:.1f}",
            f"**{r['stack_img_s'] * flops / peak:.1%}**",
            f"{r['stack_img_s'] * flops / (ceiling * 1e12):.1%}",
        ]
        for r in rows
    ]
    header = ["micro batch", "img/s", "MFU", "share of the measured matmul ceiling"]
    return (
        f"MFU is the trials' own `mfu` column: throughput x `flops_per_sample` / (`num_workers` x `peak_flops`). "
        f"`flops_per_sample` is the analytic count of `trainers/flops.py` (3 x the forward pass's matmuls, the "
        f"attention matmuls included): {flops / 1e9:.1f} GFLOP for ViT-B/16 at 224 px; `peak_flops` the card's "
        f"dense bf16 spec peak, {peak / 1e12:.0f} TFLOP/s. The last column is a second figure, the same achieved "
        f"FLOP/s over the card's measured bf16 matmul ceiling (an 8192^3 matmul in the same run: "
        f"{ceiling:.0f} TFLOP/s), not an MFU.\n\n" + table(header, body, "rrrr")
    )


@figure("h200-batch-grid-before")
def h200_batch_grid_before() -> str:
    rows = [r for r in summary("h200-batch-grid") if r["status"] == "completed"]
    body = [
        [
            str(r["micro_batch_per_worker"]),
            f"{r['throughput']:.1f}",
            f"{r['step_time_ms']:.1f}",
            f"{r['step_time_p95_ms']:.1f}",
            f"{r['peak_mem_gib']:.2f}",
            f"{r['setup_s']:.1f}",
            f"{r['trial_wall_s']:.1f}",
        ]
        for r in sorted(rows, key=lambda r: r["micro_batch_per_worker"])
    ]
    header = ["micro batch", "samples/s", "step time (ms)", "p95 step (ms)", "peak memory (GiB)", "setup (s)"]
    return table([*header, "trial wall (s)"], body, "rrrrrrr")


# --- issue 13's sweep with and without the bytecode cache on three H100 hosts (docs/results/h100-bytecode-cache) ---


def cache_sweeps(cache: bool) -> list[dict]:
    return [r for r in summary("h100-bytecode-cache") if r["cache"] == cache]


def median_range(values: list[float], fmt: str) -> str:
    return f"{statistics.median(values):{fmt}} ({min(values):{fmt}}-{max(values):{fmt}})"


@figure("h100-bytecode-cache-headline")
def h100_bytecode_cache_headline() -> str:
    new, base = cache_sweeps(True), cache_sweeps(False)
    return (
        f"{statistics.median(r['duty_cycle'] for r in new):.2f} of the time "
        f"({span([r['duty_cycle'] for r in new], '.3f')}, {len(new)} sweeps) against "
        f"{statistics.median(r['duty_cycle'] for r in base):.2f} ({span([r['duty_cycle'] for r in base], '.3f')}, "
        f"{len(base)}) without the cache, its first trial's `setup_s` "
        f"{statistics.median(r['first_setup_s'] for r in new):.1f} s against "
        f"{statistics.median(r['first_setup_s'] for r in base):.1f} s"
    )


@figure("h100-bytecode-cache")
def h100_bytecode_cache() -> str:
    columns = []
    for cache in (False, True):
        rows = cache_sweeps(cache)
        hosts = [sum(r["host"] == h for r in rows) for h in dict.fromkeys(r["host"] for r in rows)]
        later = [s for r in rows for s in json.loads(r["later_setup_s"])]
        columns.append(
            [
                f"{len(rows)} ({' + '.join(map(str, hosts))})",
                median_range([r["first_setup_s"] for r in rows], ".2f") + " s",
                median_range(later, ".2f") + " s",
                f"<= {max(r['max_teardown_s'] for r in rows):.3f} s",
                median_range([r["duty_cycle"] for r in rows], ".3f"),
                span([r["first_step_from_launch_s"] for r in rows], ".1f") + " s",
                median_range([r["duty_cycle_from_launch"] for r in rows], ".3f"),
            ]
        )
    names = ["sweeps (per host)", "first trial's `setup_s`", "later trials' `setup_s`", "`teardown_s`", "duty cycle"]
    names += ["first step after launch", "duty cycle from launch"]
    header = ["", "without the cache (673c4d0)", "with it (the first sweep on each host with the cache empty)"]
    return table(header, [[name, *values] for name, *values in zip(names, *columns)], "lrr")


# --- the README's CPU example sweeps (docs/results/cpu_examples.py regenerates both) ---


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


# --- ViT-B/16 with its class token at micro batch 1 on one H100 (docs/results/h100-sp-resolution) ---


def resolution_script():
    """The experiment's own script, whose edge rule (largest fit, linear-fit prediction) the tables reuse."""
    import importlib.util

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


# --- the full stack compiled against hand-written PyTorch on one H100 (docs/results/h100-bench-compile) ---


@figure("h100-bench-compile")
def h100_bench_compile() -> str:
    rows = summary("h100-bench-compile")
    body = []
    for batch in sorted({r["batch"] for r in rows}):
        plain = [r for r in rows if r["batch"] == batch and r["what"] != "stack"]
        best = max(plain, key=lambda r: r["img_s"])
        eager = next(r for r in plain if r["what"] == "eager")
        (stack,) = [r for r in rows if r["batch"] == batch and r["what"] == "stack"]
        body.append(
            [
                str(batch),
                f"{eager['img_s']:.1f}",
                best["what"],
                f"{best['img_s']:.1f} ({best['img_s_min']:.1f}-{best['img_s_max']:.1f})",
                f"{stack['img_s']:.1f} ({stack['img_s_min']:.1f}-{stack['img_s_max']:.1f})",
                f"**{stack['img_s'] / best['img_s']:.3f}**",
                f"{stack['setup_s']:.1f}",
                f"{stack['warmup_s']:.1f}",
            ]
        )
    header = ["micro batch", "eager img/s", "best hand-written", "its img/s", "stack compiled img/s", "ratio"]
    return table([*header, "later trial's setup (s)", "its warm-up (s)"], body, "rrlrrrrr")


# --- the step-time model against measurement on 16 CPU cores (docs/results/cpu16-prediction) ---


@figure("cpu16-prediction")
def cpu16_prediction() -> str:
    body = [
        [
            r["run"],
            r["scaling"],
            str(r["num_workers"]),
            str(r["micro_batch"]),
            f"{r['compute_ms']:.1f}",
            f"{r['comm_ms']:.2f}",
            f"{r['step_time_ms']:.1f}",
            f"{r['measured_step_time_ms']:.1f} ({r['measured_min_ms']:.1f}-{r['measured_max_ms']:.1f})",
            "-" if r["measured_comm_ms"] is None else f"{r['measured_comm_ms']:.1f}",
            f"{r['error']:+.1%}",
            r["missed_term"] or "",
        ]
        for r in summary("cpu16-prediction")
    ]
    header = ["run", "scaling", "ranks", "micro batch", "compute (ms)", "comm (ms)", "predicted step (ms)"]
    header += ["measured step, median (range)", "profiled comm (ms)", "error", "term further off"]
    return table(header, body, "llrrrrrrrrl")


def render_text(text: str) -> str:
    """``text`` with every figure block's body replaced by its rendering; an unknown name is an error."""

    def replace(match: re.Match) -> str:
        name = match["name"]
        if name not in FIGURES:
            raise KeyError(f"no figure named {name!r} (docs/render.py has: {', '.join(sorted(FIGURES))})")
        newline = match["newline"]
        return f"<!-- figure:{name} -->{newline}{FIGURES[name]()}{newline}<!-- /figure -->"

    return BLOCK.sub(replace, text)


def used_figures(text: str) -> set[str]:
    return {m["name"] for m in BLOCK.finditer(text)}


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(prog="python docs/render.py", description=__doc__.split("\n")[0])
    parser.add_argument("--check", action="store_true", help="change nothing; exit 1 where a block differs")
    check = parser.parse_args(argv).check
    stale = []
    for doc in DOCS:
        text = doc.read_text()
        rendered = render_text(text)
        if rendered != text:
            stale.append(doc.relative_to(ROOT))
            if not check:
                doc.write_text(rendered)
    for doc in stale:
        print(f"{'differs' if check else 'rendered'}: {doc}")
    return 1 if check and stale else 0


if __name__ == "__main__":
    sys.exit(main())
