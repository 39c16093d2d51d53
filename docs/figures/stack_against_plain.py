"""The full stack against plain PyTorch on an H200, its MFU and compile=auto's defaults
(docs/results/h200-bench, h200-batch-grid)."""

from __future__ import annotations

from . import experiment_script, figure, records, span, summary, table


def bench_rows(run: str, compiled: bool) -> list[dict]:
    return [r for r in summary("h200-bench") if r["run"] == run and r["compile"] == compiled]


@figure("stack-against-plain")
def stack_against_plain() -> str:
    runs = [("", r) for r in bench_rows("compile", False)] + [
        (" (a second run)", r) for r in bench_rows("cifar", False)
    ]
    body = [
        [f"{r['batch']}{run}", f"{r['plain_img_s']:.1f}", f"{r['stack_img_s']:.1f}", f"**{r['ratio']:.3f}**"]
        for run, r in runs
    ]
    return table(["micro batch", "plain PyTorch img/s", "full stack img/s", "ratio"], body, "rrrr")


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
        f"`flops_per_sample` is the analytic count of `trainers/measure/flops.py` (3 x the forward pass's matmuls, the "
        f"attention matmuls included): {flops / 1e9:.1f} GFLOP for ViT-B/16 at 224 px; `peak_flops` the card's "
        f"dense bf16 spec peak, {peak / 1e12:.0f} TFLOP/s. The last column is a second figure, the same achieved "
        f"FLOP/s over the card's measured bf16 matmul ceiling (an 8192^3 matmul in the same run: "
        f"{ceiling:.0f} TFLOP/s), not an MFU.\n\n" + table(header, body, "rrrr")
    )


@figure("h200-cifar")
def h200_cifar() -> str:
    (r,) = [r for r in bench_rows("cifar", False) if r["cifar_img_s"] is not None]
    rows = [
        ["input pipeline alone (gather, normalise, flip, resize to 224 px)", f"{r['pipeline_img_s']:,.0f}"],
        ["the model on synthetic data, full stack", f"{r['stack_img_s']:.1f}"],
        [
            "the model on CIFAR-10 files, full stack",
            f"{r['cifar_img_s']:.1f} (**{r['cifar_over_synthetic']:.3f}x** synthetic)",
        ],
    ]
    return table(["", "img/s"], rows, "lr")


@figure("h200-cifar-data-wait")
def h200_cifar_data_wait() -> str:
    (r,) = [r for r in bench_rows("cifar", False) if r["cifar_img_s"] is not None]
    return f"{r['data_wait_fraction']:.4f}"


def plain_baseline() -> list[dict[str, float]]:
    """The first H200 run's plain PyTorch loop, one line per configuration, and its matmul ceiling."""
    return list(records("h200-batch-grid", "plain_baseline", "summary-logs.csv").values())


@figure("h200-plain-baseline")
def h200_plain_baseline() -> str:
    lines = plain_baseline()
    eager = [r for r in lines if r.get("img") == 224 and not r.get("compile")]
    (compiled,) = [r for r in lines if r.get("img") == 224 and r.get("compile")]
    (ceiling,) = [r["bf16_matmul_tflops"] for r in lines if "bf16_matmul_tflops" in r]
    rates = " / ".join(format(r["ips"], ".0f") for r in eager)
    batches = " / ".join(format(r["bs"], ".0f") for r in eager)
    return (
        f"{rates} img/s at batch {batches}, and {compiled['ips']:.0f} img/s at {compiled['bs']:.0f} with "
        f"`torch.compile`.\nThe card's measured bf16 matmul ceiling is {ceiling:.0f} TFLOP/s."
    )


@figure("h200-batch-grid-at-256")
def h200_batch_grid_at_256() -> str:
    trials = [r for r in summary("h200-batch-grid") if r["status"] == "completed"]
    (trial,) = [r for r in trials if r["micro_batch_per_worker"] == 256]
    (plain,) = [r for r in plain_baseline() if r.get("img") == 224 and r.get("bs") == 256 and not r.get("compile")]
    return f"{trial['throughput']:.0f} samples/s at 256 ({trial['throughput'] / plain['ips']:.2f}x plain PyTorch)"


@figure("h200-stack-now")
def h200_stack_now() -> str:
    rows = bench_rows("compile", False)
    rates = " / ".join(format(r["stack_img_s"], ".0f") for r in rows)
    batches = " / ".join(str(r["batch"]) for r in rows)
    return f"{rates} samples/s at micro batch {batches}, {h200_stack_ratio_range()}"


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


@figure("compile-defaults")
def compile_defaults() -> str:
    modes = experiment_script("h200-bench", "compile_defaults.py").measured_defaults()["vit_base"]
    (default_s, default_x, _, _), (tuned_s, tuned_x, _, _) = modes["default"], modes["max-autotune-no-cudagraphs"]
    return (
        f"{default_s:.0f} s of compile for {default_x:.2f}x; in max-autotune-no-cudagraphs, from the hand-written "
        f"H100 runs of `docs/results/h100-bench-compile/summary-autotune.csv`, {tuned_s:.0f} s for {tuned_x:.2f}x"
    )


@figure("h200-bench-flops")
def h200_bench_flops() -> str:
    (flops,) = {r["flops_per_sample"] for r in summary("h200-bench")}
    (peak,) = {r["peak_flops"] for r in summary("h200-bench")}
    return f"({flops / 1e9:.1f} GFLOP) and `peak_flops` the H200's bf16 spec peak ({peak / 1e12:.0f} TFLOP/s)"


@figure("h200-batch-grid-small-steps")
def h200_batch_grid_small_steps() -> str:
    steps = [r["step_time_ms"] for r in summary("h200-batch-grid") if r["micro_batch_per_worker"] < 64]
    return f"{span(steps, '.0f')} ms"
