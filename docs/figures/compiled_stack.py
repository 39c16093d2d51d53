"""The full stack compiled against hand-written PyTorch on one H100 (docs/results/h100-bench-compile)."""

from __future__ import annotations

from collections.abc import Iterable

from . import figure, span, spoken, summary, table

TARGET_RATIO = 0.97  # issue 39: the stack against the best hand-written variant at every micro batch
AUTOTUNE = "max-autotune-no-cudagraphs"
AUTOTUNE_STACK = "summary-autotune-stack.csv"  # host C: the stack compiled in the best hand-written variant's mode


def ranged(row: dict) -> str:
    return f"{row['img_s']:.1f} ({row['img_s_min']:.1f}-{row['img_s_max']:.1f})"


def fastest(rows: Iterable[dict]) -> dict:
    """The row of the highest median img/s (the best hand-written variant among ``rows``)."""
    return max(rows, key=lambda r: r["img_s"])


def by_batch(name: str = "summary.csv") -> list[tuple[int, dict, dict, dict]]:
    """Per micro batch: hand-written eager, the best hand-written variant, and the stack (``name``: which run)."""
    rows = summary("h100-bench-compile", name)
    out = []
    for batch in sorted({r["batch"] for r in rows}):
        plain = [r for r in rows if r["batch"] == batch and r["what"] != "stack"]
        (stack,) = [r for r in rows if r["batch"] == batch and r["what"] == "stack"]
        out.append((batch, next(r for r in plain if r["what"] == "eager"), fastest(plain), stack))
    return out


def stack_table(name: str) -> str:
    """Per micro batch: eager, the best hand-written variant and the stack compiled beside it (``name``: which run)."""
    body = []
    for batch, eager, best, stack in by_batch(name):
        trials = [stack["first_img_s"], *(float(v) for v in str(stack["later_img_s"]).split(";"))]
        body.append(
            [
                str(batch),
                f"{eager['img_s']:.1f}",
                best["what"],
                ranged(best),
                ranged(stack),
                f"**{stack['img_s'] / best['img_s']:.3f}** "
                f"({stack['img_s_min'] / best['img_s_max']:.3f}-{stack['img_s_max'] / best['img_s_min']:.3f})",
                " / ".join(f"{v:.0f}" for v in trials),
                f"{stack['setup_s']:.1f}",
                f"{stack['warmup_s']:.1f}",
            ]
        )
    header = ["micro batch", "eager img/s", "best hand-written", "its img/s", "stack compiled img/s", "ratio"]
    header += ["stack's trials in order (img/s)", "later trial's setup (s)", "its warm-up (s)"]
    return table(header, body, "rrlrrrrrr")


figure("h100-bench-compile")(lambda: stack_table("summary.csv"))
figure("h100-bench-compile-autotune-stack")(lambda: stack_table(AUTOTUNE_STACK))


@figure("h100-bench-compile-says")
def h100_bench_compile_says() -> str:
    rows = by_batch()
    ratios = {batch: stack["img_s"] / best["img_s"] for batch, _, best, stack in rows}
    met = [b for b, r in ratios.items() if r >= TARGET_RATIO]
    missed = [b for b, r in ratios.items() if r < TARGET_RATIO]
    text = f"The stack reaches at least {TARGET_RATIO}x the best hand-written variant at micro batch {spoken(met)}" + (
        f" ({span([ratios[b] for b in met], '.3f')})" if met else ""
    )
    gaps = step_gaps(rows)
    for batch in missed:
        _, _, best, stack = next(r for r in rows if r[0] == batch)
        text += (
            f"; at {batch} it reaches {ratios[batch]:.3f}x, {gaps[batch]:.1f} ms a step more than the hand-written "
            f"{best['what']} step ({1000 * batch / best['img_s']:.1f} ms)"
        )
    # a ratio's range: the stack's worst window over the best variant's best, and best over worst
    within = all(s["img_s_min"] / b["img_s_max"] <= 1 <= s["img_s_max"] / b["img_s_min"] for _, _, b, s in rows)
    if within:
        return text + (
            f". At every micro batch the ratio's range spans 1: the two steps' medians differ by "
            f"{span(list(gaps.values()), '.1f')} ms, less than the spread of their windows."
        )
    return text + (
        f". The stack's step is longer than the best hand-written one by {span(list(gaps.values()), '.1f')} ms at "
        f"every micro batch: a cost per step, not per sample, which the shortest step shows most."
    )


def step_gaps(rows: list[tuple[int, dict, dict, dict]]) -> dict[int, float]:
    """Per micro batch, ms a step the stack's median takes over the best hand-written variant's."""
    return {batch: 1000 * batch * (1 / stack["img_s"] - 1 / best["img_s"]) for batch, _, best, stack in rows}


@figure("h100-bench-compile-runs")
def h100_bench_compile_runs() -> str:
    """The run before the one-rank reduction change beside this one, and compile-once-per-group figures."""
    now, before = by_batch(), by_batch("summary-before.csv")
    ratios = " / ".join(f"{stack['img_s'] / best['img_s']:.3f}" for _, _, best, stack in before)
    batches = spoken([batch for batch, *_ in before])
    plain_warmups = [r["warmup_s"] for r in summary("h100-bench-compile") if r["what"] not in ("eager", "stack")]
    _, _, best, stack = now[-1]
    return (
        f"The run before (summary-before.csv) gave {ratios} at micro batch {batches}: the stack's step "
        f"{span(list(step_gaps(before).values()), '.1f')} ms longer than the best hand-written one at every micro "
        f"batch, against {span(list(step_gaps(now).values()), '.1f')} ms here. A later compiled trial's setup "
        f"here is {span([s['setup_s'] for *_, s in now], '.1f')} s and its warm-up "
        f"{span([s['warmup_s'] for *_, s in now], '.1f')} s, against {span(plain_warmups, '.0f')} s for a "
        f"hand-written variant compiled from scratch. At micro batch {now[-1][0]}: the best hand-written "
        f"{best['img_s']:.0f} img/s, the stack {stack['img_s']:.0f}."
    )


@figure("h100-bench-compile-256")
def h100_bench_compile_256() -> str:
    """The bench at micro batch 256 alone, on a third H100 host (summary-256.csv)."""
    ((batch, _, best, stack),) = by_batch("summary-256.csv")
    return (
        f"On a third H100 host, micro batch {batch} alone: the best hand-written variant ({best['what']}) "
        f"{ranged(best)} img/s, the stack {ranged(stack)}, ratio **{stack['img_s'] / best['img_s']:.3f}** "
        f"({stack['img_s_min'] / best['img_s_max']:.3f}-{stack['img_s_max'] / best['img_s_min']:.3f})."
    )


def autotune_runs() -> dict[tuple[str, int], dict[str, dict]]:
    """summary-autotune.csv as (host, micro batch) -> hand-written variant -> its row."""
    runs: dict[tuple[str, int], dict[str, dict]] = {}
    for r in summary("h100-bench-compile", "summary-autotune.csv"):
        runs.setdefault((r["host"], r["batch"]), {})[r["what"]] = r
    return runs


@figure("h100-bench-compile-autotune")
def h100_bench_compile_autotune() -> str:
    """Every hand-written variant, max-autotune-no-cudagraphs among them, per host and micro batch."""
    runs = autotune_runs()
    variants = [v for v in ("eager", "default", "reduce-overhead", AUTOTUNE) if any(v in r for r in runs.values())]
    body = []
    for (host, batch), run in runs.items():
        best = fastest(run.values())["what"]
        cells = [
            "-" if v not in run else f"{'**' * (v == best)}{run[v]['img_s']:.1f}{'**' * (v == best)}" for v in variants
        ]
        lead = f"{run[AUTOTUNE]['img_s'] / run['reduce-overhead']['img_s']:.3f}" if "reduce-overhead" in run else "-"
        body.append([host, str(batch), *cells, lead, f"{run[AUTOTUNE]['warmup_s']:.0f}"])
    header = ["host", "micro batch", *(f"{v} img/s" for v in variants), f"{AUTOTUNE} over reduce-overhead"]
    return table([*header, f"{AUTOTUNE} warm-up (s)"], body, "lr" + "r" * (len(variants) + 2))


@figure("h100-bench-compile-autotune-says")
def h100_bench_compile_autotune_says() -> str:
    """What the max-autotune runs mean for the stack's target, from summary-autotune.csv and the stack's runs."""
    runs = autotune_runs()
    raced = {key: run for key, run in runs.items() if "reduce-overhead" in run}  # against the other compiled mode
    won = {key: fastest(run.values())["what"] == AUTOTUNE for key, run in raced.items()}
    leads = [raced[key][AUTOTUNE]["img_s"] / raced[key]["reduce-overhead"]["img_s"] - 1 for key in won if won[key]]
    won_batches = sorted({batch for (_, batch), w in won.items() if w})
    stack_against_ro = [
        stack["img_s"] / best["img_s"]
        for name in ("summary.csv", "summary-256.csv")
        for batch, _, best, stack in by_batch(name)
        if batch in won_batches and best["what"] == "reduce-overhead"
    ]
    ran = [key for key in raced if key[1] in won_batches]
    text = (
        f"{AUTOTUNE} was the best hand-written variant at micro batch {spoken(won_batches)} in "
        f"{len(leads)} of {len(ran)} runs beside reduce-overhead, {span([100 * v for v in leads], '.1f')}% above it"
    )
    for (host, batch), run in raced.items():
        best = fastest(run.values())
        if best["what"] != AUTOTUNE:
            text += (
                f"; at micro batch {batch} (host {host}) {best['what']} stayed the best, {AUTOTUNE} at "
                f"{run[AUTOTUNE]['img_s'] / best['img_s']:.3f}x it"
            )
    tuned = [r[AUTOTUNE] for r in runs.values()]
    warmups = [r["warmup_s"] for r in tuned]
    choices = [r["choices_min"] for r in tuned] + [r["choices_max"] for r in tuned]
    margin = 1 - TARGET_RATIO
    relation = "less than" if max(leads) < margin else "at least"
    stack_against_ma = [
        (batch, best, stack)
        for batch, _, best, stack in by_batch(AUTOTUNE_STACK)
        if best["what"] == stack["compile_mode"] == AUTOTUNE
    ]
    return (
        text
        + f". Its warm-up took {span(warmups, '.0f')} s a micro batch, {span([r['tuning_s'] for r in tuned], '.0f')} "
        f"s of it Inductor's benchmarking of {span(choices, '.0f')} "
        f"kernel choices for each of {span([r['tuned_ops'] for r in tuned], '.0f')} operations (the step's matrix "
        f"products and the patch convolution), one at a time. Its lead is {relation} the target's margin "
        f"({100 * margin:.0f}%). The stack compiled in {AUTOTUNE} ran at "
        + "; ".join(
            f"**{stack['img_s'] / best['img_s']:.3f}** ({stack['img_s_min'] / best['img_s_max']:.3f}-"
            f"{stack['img_s_max'] / best['img_s_min']:.3f})x hand-written {AUTOTUNE} at micro batch {batch}"
            for batch, best, stack in stack_against_ma
        )
        + f" (host C, {AUTOTUNE_STACK}), and compiled in reduce-overhead at {span(stack_against_ro, '.3f')}x "
        f"hand-written reduce-overhead at micro batch {spoken(won_batches)} (summary.csv, summary-256.csv)."
    )
