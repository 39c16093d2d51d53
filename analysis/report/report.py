"""What report.md and report.html say, in reading order: the one-screen summary, then details."""

from __future__ import annotations

import json

import pandas as pd

from analysis.metrics.batch import KNEE_FRACTION
from analysis.metrics.compute import SweepAnalysis
from analysis.metrics.scaling import MIN_FIT_WORKER_COUNTS, ScalingResult
from analysis.metrics.tuned import explanation
from analysis.report.best import best_finding, search_sentence, with_parameters
from analysis.report.findings import answer, headlines, left_out_sentence
from analysis.report.paper import paper_beside_us
from analysis.report.plots import HEADLINES, Plots
from analysis.report.prediction_section import PREDICTED_FIGURE, prediction_section
from analysis.report.render import Block, Bullets, Heading, Image, Paragraph, Table
from analysis.report.sequence import resolution_section
from analysis.report.setup import measured_setup
from analysis.rows.evidence import RULE, Family
from analysis.rows.groups import COMPARISONS, trial_params

TOP_ROWS = 15  # longer per-trial tables are cut here; scaling.parquet has every row


def build_report(analysis: SweepAnalysis, plots: Plots) -> list[Block]:
    blocks: list[Block] = [Heading(f"Sweep {analysis.data.name}: scaling and batch-size report", 1)]
    blocks += summary_section(analysis, plots)
    blocks += scaling_section(analysis.strong, plots, analysis.family)
    blocks += scaling_section(analysis.weak, plots, analysis.family)
    blocks += batch_section(analysis, plots)
    blocks += tuned_section(analysis, plots)
    blocks += comm_section(analysis, plots)
    blocks += prediction_section(analysis, images(plots, PREDICTED_FIGURE))
    blocks += accuracy_section(analysis, plots)
    blocks += trials_section(analysis, plots)
    blocks += economy_section(analysis)
    blocks += unanalysed_section(analysis)
    if plots.skipped:
        blocks += [Heading("Plots not made"), Bullets([f"`{name}`: {why}" for name, why in plots.skipped.items()])]
    blocks += [
        Heading("Files"),
        Bullets(
            [
                "`scaling.parquet`: one row per completed trial with its group ids and every derived metric",
                "`summary.json`: the headline numbers, groups, knees, recommendation and fits",
                "`report.html`: this report as one self-contained file",
            ]
        ),
    ]
    return blocks


def summary_section(analysis: SweepAnalysis, plots: Plots) -> list[Block]:
    """The answer first, in one sentence; then what was measured; then the findings, the rule they pass and
    the headline plot."""
    setup = measured_setup(analysis.data)
    blocks: list[Block] = []
    question = " ".join(t for t in (analysis.data.question, search_sentence(analysis.data.manifest)) if t)
    if question:
        blocks.append(Paragraph(f"**Question:** {question}"))
    said = answer(analysis)
    blocks.append(Paragraph(f"**Answer:** {said}"))
    best = best_finding(analysis.data)
    if best is not None and best.sentence() not in said:
        blocks.append(Paragraph(f"**Best trial:** {best.sentence()}"))
    blocks.append(Table(["what was measured", ""], [[f.name, f.value] for f in setup.facts]))
    if setup.missing:
        blocks.append(Paragraph("Not recorded by this sweep: " + "; ".join(setup.missing) + "."))
    blocks += [Heading("Summary"), Paragraph(left_out_sentence(analysis))]
    if not analysis.comparable:
        blocks.append(
            Paragraph(
                "No comparison: every group has one value of its swept quantity. A comparison needs two or more trials "
                "that differ only in `num_workers` (scaling) or `micro_batch_per_worker` (batch size)."
            )
        )
    blocks += [
        Bullets(headlines(analysis) or ["No finding: the figures below hold no difference worth naming."]),
        Paragraph(f"**Rule:** {RULE}. **Comparisons:** {analysis.family.sentence()}."),
    ]
    headline = headline_plot(plots)
    if headline:
        blocks += images(plots, headline)
    paper = paper_beside_us(analysis, setup)
    if paper:
        blocks += [
            Paragraph(
                '**The paper beside us** ("Scaling Vision Transformers: Evaluating DeepSpeed for '
                'Image-Centric Workloads"):'
            ),
            Bullets(paper),
        ]
    return blocks


def images(plots: Plots, *names: str) -> list[Block]:
    return [Image(plots.made[n], plots.captions[n]) for n in names if n in plots.made]


def headline_plot(plots: Plots) -> str | None:
    return next((n for n in HEADLINES if n in plots.made), None)


def detail_images(plots: Plots, *names: str) -> list[Block]:
    """A section's figures, less the headline plot the summary already shows."""
    return images(plots, *(n for n in names if n != headline_plot(plots)))


def rounded(frame: pd.DataFrame, percent: tuple[str, ...] = ()) -> Table:
    frame = frame.copy()
    for column in percent:
        frame[column] = [None if pd.isna(v) else f"{v:.1%}" for v in frame[column]]
    return Table.of(frame)


def present(frame: pd.DataFrame, columns: list[str]) -> list[str]:
    """Columns with at least one value: a column of nulls says nothing and only widens the table."""
    return [c for c in columns if frame[c].notna().any()]


def cut(frame: pd.DataFrame) -> tuple[pd.DataFrame, list[Block]]:
    if len(frame) <= TOP_ROWS:
        return frame, []
    return frame.head(TOP_ROWS), [Paragraph(f"First {TOP_ROWS} of {len(frame)} rows; all are in `scaling.parquet`.")]


SCALING_TEXT = {
    "strong": (
        "Strong scaling (fixed total samples)",
        "Speedup S = R(n) / R(base) of the timed rates R = `timed_samples` / `timed_s` (warm-up steps excluded; "
        "`warmup_s` is shown beside, never inside); efficiency E = S · base / n; Karp–Flatt e = (1/S − 1/p) / "
        "(1 − 1/p) at p = n / base; the Amdahl fit needs three or more worker counts.",
    ),
    "weak": (
        "Weak scaling (samples per worker fixed)",
        "Scaled speedup = R(n) / R(base) of the timed rates; efficiency = scaled speedup / p; Gustafson "
        "S = p − α (p − 1) fitted by least squares in α (three or more worker counts).",
    ),
}
SCALING_COLUMNS = {
    "strong": ["speedup", "efficiency", "karp_flatt"],
    "weak": ["efficiency", "throughput_per_worker", "scaled_speedup", "gustafson_speedup"],
}
SCALING_FIGURES = {"strong": ("speedup",), "weak": ("efficiency", "weak_throughput")}


def fit_cells(result: ScalingResult) -> list[str]:
    if result.amdahl:
        fit = result.amdahl
        return [
            "Amdahl",
            f"f = {fit.serial_fraction:.4f}, T(1) = {fit.t1_s:.4g} s",
            f"{fit.rms_residual_s:.3g} s",
            str(fit.degrees_of_freedom),
            f"{fit.max_speedup:.3g}×" if fit.max_speedup else "∞",
        ]
    if result.gustafson:
        fit = result.gustafson
        return ["Gustafson", f"α = {fit.alpha:.4f}", f"{fit.rms_residual:.3g}", str(fit.degrees_of_freedom), "—"]
    return [f"no fit (< {MIN_FIT_WORKER_COUNTS} worker counts)", "—", "—", "—", "—"]


def scaling_section(results: list[ScalingResult], plots: Plots, family: Family) -> list[Block]:
    """Strong or weak scaling, one piece: the definitions, the fits, the verdicts and the per-trial rows."""
    if not results:
        return []
    kind = results[0].kind
    title, definitions = SCALING_TEXT[kind]
    blocks: list[Block] = [Heading(title), Paragraph(definitions)]
    for result in results:
        if not result.base_is_one:
            blocks.append(
                Paragraph(
                    f"Group {result.group.id} has no 1-worker trial: the base is {result.base_workers} workers, so "
                    "the ratios and efficiency are relative to it (p = n / base)."
                )
            )
    blocks.append(
        Table(
            ["group", "base workers", "worker counts", "fit", "parameters", "RMS residual", "dof", "bound", "rule"],
            [
                [r.group.id, str(r.base_workers), str(r.worker_counts), *fit_cells(r), rule_cell(r, family)]
                for r in results
            ],
        )
    )
    rows = pd.concat([r.rows.assign(group=r.group.id) for r in results], ignore_index=True)
    rows = rows[["group", "trial_id", "num_workers", "timed_s", "warmup_s", *SCALING_COLUMNS[kind]]]
    rows, note = cut(rows)
    return blocks + [rounded(rows, ("efficiency",)), *note, *detail_images(plots, *SCALING_FIGURES[kind])]


def rule_cell(result: ScalingResult, family: Family) -> str:
    verdict = result.faster() if result.kind == "strong" else result.per_worker_kept()
    what = "faster than the base" if result.kind == "strong" else "less per worker than the base"
    return f"{what}: {verdict.sentence(family)}"


def batch_section(analysis: SweepAnalysis, plots: Plots) -> list[Block]:
    if not analysis.batch:
        # --find-max-batch of a one-batch grid runs each configuration at its edge only: no batch analysis,
        # but the search's table is still the report's.
        found = max_batch_section(analysis)
        return [Heading("Batch size"), *found] if found else []
    blocks: list[Block] = [
        Heading("Batch size"),
        Paragraph(
            f"The knee is the smallest micro batch reaching {KNEE_FRACTION:.0%} of the group's best throughput per "
            "worker (medians over repeats). Recommendation per group:"
        ),
        Bullets([f"{r.group.id}: {r.recommendation}" for r in analysis.batch]),
    ]
    for result in analysis.batch:
        columns = [
            "micro_batch_per_worker",
            "global_batch",
            "throughput_per_worker",
            "throughput_min",
            "throughput_max",
            "peak_mem_gib",
            "comm_exposed_ms",
            "data_wait_fraction",
            "mfu",
            "joules_per_sample",
            "val_accuracy",
            "final_loss",
            "trials",
        ]
        points = result.points[present(result.points, columns)]
        blocks += [
            Paragraph(f"Group {result.group.id}:"),
            rounded(points, tuple(c for c in ("data_wait_fraction", "val_accuracy", "mfu") if c in points)),
        ]
    best = analysis.best_batch()
    if best is not None and best.points["joules_per_sample"].notna().any():
        frugal = best.points.loc[best.points["joules_per_sample"].idxmin()]
        blocks.append(
            Paragraph(
                f"Fewest joules per sample: micro batch {frugal.micro_batch_per_worker:g} "
                f"({frugal.joules_per_sample:.4g} J/sample, group {best.group.id})."
            )
        )
    blocks += max_batch_section(analysis)
    return blocks + detail_images(plots, "batch_throughput", "batch_overheads", "batch_accuracy", "joules_per_sample")


def tuned_section(analysis: SweepAnalysis, plots: Plots) -> list[Block]:
    """Accuracy vs batch size at the scaling rule's learning rate and at the tuned one: only where the sweep
    searched the learning rate."""
    if not analysis.tuned:
        return []
    blocks: list[Block] = [
        Heading("Accuracy vs batch size: scaling-rule and tuned learning rate"),
        Paragraph(
            "Each point is the median over repeats (each repeat an independent search at that batch size) with "
            "their range: for the tuned learning rate the best completed trial of each search, for the scaling "
            "rule the completed trial at the optimizer's scaling-rule learning rate and the default warm-up. "
            "Trials the scheduler stopped have no final accuracy and are not candidates."
        ),
    ]
    for result in analysis.tuned:
        for curve in (result.rule, result.tuned):
            blocks += [
                Heading(f"Accuracy vs batch size, {curve.label} ({result.group.id})", 3),
                rounded(curve.points(), ("val_accuracy", "accuracy_min", "accuracy_max"))
                if curve.values
                else Paragraph("No completed trial ran at it."),
            ]
        blocks += [
            Paragraph(f"The best trial of each search ({result.group.id}):"),
            rounded(result.best, ("val_accuracy",)),
            Paragraph(result.finding(analysis.family)),
        ]
    both = explanation(analysis.tuned, analysis.family)
    return blocks + ([Paragraph(both)] if both else []) + detail_images(plots, "tuned_accuracy")


# What names a configuration when only one was searched (with several, the parameters that differ).
CONFIGURATION_IDENTITY = ("model", "image_size", "precision", "engine", "zero_stage", "num_workers")


def configuration_labels(configurations: list[dict]) -> list[str]:
    """One short label per searched configuration: the parameters in which they differ, or its identity."""
    keys = sorted({k for c in configurations for k in c if len({json.dumps(d.get(k)) for d in configurations}) > 1})
    keys = keys or [k for k in CONFIGURATION_IDENTITY if any(k in c for c in configurations)]
    return [" ".join(f"{k}={c[k]}" for k in keys if k in c) for c in configurations]


def max_batch_section(analysis: SweepAnalysis) -> list[Block]:
    table = analysis.data.max_batch
    if table.empty:
        return []
    shown = table.drop(columns=["sweep"], errors="ignore")
    shown["configuration"] = configuration_labels([json.loads(c) for c in table["configuration"]])
    return [
        Paragraph("Largest micro batch that fits (`max_batch/`; the full configuration is in the table):"),
        Table.of(shown),
    ]


def comm_section(analysis: SweepAnalysis, plots: Plots) -> list[Block]:
    trials = analysis.per_trial
    blocks: list[Block] = [
        Heading("Communication and stragglers"),
        Paragraph(
            "`comm_exposed_ms`: per optimizer step, the trial's step time minus the median step time of the 1-rank "
            "trials that ran the same per-rank step (same parameters but the worker count and what moves with it); "
            "null without such a trial. `comm_kernel_ms` and `comm_overlap` come from a profiled window after the "
            "timed steps, `allreduce_probe_ms` from one all-reduce of the gradients (called `comm_time_ms` in older "
            "tables)."
        ),
    ]
    multi = trials[trials["num_workers"] > 1]
    columns = present(multi, ["comm_exposed_ms", "comm_kernel_ms", "comm_overlap", "allreduce_probe_ms"])
    if multi.empty or not columns:
        blocks.append(Paragraph("No communication figure: no trial ran on two or more ranks with one measured."))
    else:
        comm = multi.sort_values("comm_exposed_ms", ascending=False, na_position="last")
        comm, note = cut(comm[["trial_id", "num_workers", "micro_batch_per_worker", "step_time_ms", *columns]])
        blocks += [rounded(comm, tuple(c for c in ("comm_overlap",) if c in comm)), *note]
    if analysis.stragglers.empty:
        blocks.append(Paragraph("No straggler analysis: the ranks table has no trial with two or more ranks."))
        return blocks
    lagging = analysis.stragglers.sort_values("straggler_ratio", ascending=False)
    lagging, note = cut(lagging[present(lagging, list(lagging.columns))])
    blocks += [
        Paragraph(
            "Straggler ratio = slowest rank's busy time per step (`busy_ms`; older tables "
            "`compute_ms`; else `step_time_ms`) over the median of the other ranks; the cost is the "
            "mean time the other ranks wait for it per step."
        ),
        rounded(lagging, tuple(c for c in ("straggler_cost_fraction",) if c in lagging)),
        *note,
    ]
    return blocks


def accuracy_section(analysis: SweepAnalysis, plots: Plots) -> list[Block]:
    blocks: list[Block] = [Heading("Time to accuracy")]
    if analysis.target is None:
        return blocks + [Paragraph(f"Not computed: {analysis.target_source}.")]
    trials = analysis.per_trial.sort_values("time_to_accuracy_s", na_position="last")
    missed = trials["time_to_accuracy_s"].isna().sum()
    clock = (
        "training time from the first step (`epochs.train_elapsed_s`; validation and checkpoints excluded)"
        if analysis.accuracy_clock == "train_elapsed_s"
        else "wall time from trial start (`epochs.elapsed_s`: this table predates `train_elapsed_s`, so setup, "
        "validation and checkpoint time are inside)"
    )
    blocks.append(
        Paragraph(
            f"Target: validation accuracy ≥ {analysis.target:.4f} ({analysis.target_source}). Time is {clock} at the "
            f"end of the first epoch reaching it; {missed} trial(s) never reached it (shown as —)."
        )
    )
    rows, note = cut(
        with_parameters(
            trials[
                [
                    "trial_id",
                    "num_workers",
                    "micro_batch_per_worker",
                    "val_accuracy",
                    "time_to_accuracy_s",
                    "epoch_reached",
                ]
            ],
            analysis.data,
        )
    )
    return blocks + [rounded(rows, ("val_accuracy",)), *note, *images(plots, "time_to_accuracy")]


def trials_section(analysis: SweepAnalysis, plots: Plots) -> list[Block]:
    """Every trial's own figures: the whole report of a single-trial sweep, a reference table otherwise."""
    columns = [
        "trial_id",
        "num_workers",
        "sequence_parallel",
        "tensor_parallel",
        "micro_batch_per_worker",
        "grad_accum_steps",
        "global_batch",
        "seed",
        "throughput",
        "throughput_per_worker",
        "step_time_ms",
        "timed_steps",
        "timed_s",
        "warmup_s",
        "peak_mem_gib",
        "mfu",
        "joules_per_sample",
        "final_loss",
        "val_accuracy",
    ]
    rows, note = cut(with_parameters(analysis.per_trial[present(analysis.per_trial, columns)], analysis.data))
    blocks: list[Block] = [
        Heading("Trials"),
        rounded(rows, tuple(c for c in ("val_accuracy", "mfu") if c in rows)),
        *note,
    ]
    blocks += sequence_parallel_section(analysis)
    blocks += resolution_section(analysis.data)
    return blocks + detail_images(plots, "epochs")


def sequence_parallel_section(analysis: SweepAnalysis) -> list[Block]:
    """Sequence-parallel trials beside data parallelism alone at the same GPU count."""
    pairs = analysis.sequence_parallel
    if pairs.empty:
        return []
    return [
        Paragraph("Sequence parallelism against data parallelism alone at the same worker count (medians):"),
        Table.of(pairs),
    ]


def cpu_duty_ceiling(trials: pd.DataFrame, devices: float | None) -> tuple[float, int, float, int] | None:
    """The duty cycle a CPU-only sweep can reach, most trials at once x ranks x CPUs per rank / CPUs (at most 1),
    for the trial holding the most CPUs, with its ranks, CPUs per rank and that most-at-once; None where a trial
    ran on GPUs."""
    if not devices or trials.empty or "device" not in trials or (trials["device"] != "cpu").any():
        return None
    held = [
        (int(row["num_workers"]), float(trial_params(row).get("cpus_per_worker", 1.0))) for _, row in trials.iterrows()
    ]
    ranks, cpus = max(held, key=lambda h: h[0] * h[1])
    at_once = most_at_once(trials)
    return min(1.0, at_once * ranks * cpus / devices), ranks, cpus, at_once


def most_at_once(trials: pd.DataFrame) -> int:
    """The most trials that ran at the same moment (from started_at and finished_at; 1 where those are missing)."""
    if not {"started_at", "finished_at"} <= set(trials.columns):
        return 1
    spans = trials[["started_at", "finished_at"]].dropna()
    # an end sorts before a start at the same instant: trials that merely touch did not overlap
    events = sorted(
        [(t, 1) for t in pd.to_datetime(spans["started_at"])] + [(t, -1) for t in pd.to_datetime(spans["finished_at"])]
    )
    running = most = 0
    for _, step in events:
        running += step
        most = max(most, running)
    return max(most, 1)


def economy_section(analysis: SweepAnalysis) -> list[Block]:
    economy = analysis.data.manifest.get("economy")
    if not isinstance(economy, dict) or economy.get("duty_cycle") is None:
        return []
    setup = economy.get("median_setup_s")
    text = (
        f"Duty cycle {economy['duty_cycle']:.0%}: timed rank-seconds over the sweep's wall time "
        f"({economy.get('wall_s', float('nan')):.4g} s) × {economy.get('devices', '?')} device(s)"
    )
    from_launch = economy.get("duty_cycle_from_launch")
    if from_launch is not None:
        text += f"; {from_launch:.0%} from the sweep's launch ({economy['launch_wall_s']:.4g} s)"
    ceiling = cpu_duty_ceiling(analysis.data.trials, economy.get("devices"))
    if ceiling is not None:
        share, ranks, cpus, at_once = ceiling
        text += (
            f"; on this CPU-only cluster a trial holds ranks × CPUs per rank of the CPUs ({ranks} × {cpus:g} of "
            f"{economy['devices']:g}) and at most {at_once} ran at once, so it can reach at most {share:.0%}"
        )
    if setup is not None:
        text += f"; median trial setup {setup:.3g} s"
    later = economy.get("median_later_setup_s")
    if later is not None:
        text += f" ({later:.3g} s after the first)"
    return [Heading("Economy"), Paragraph(text + ".")]


def unanalysed_section(analysis: SweepAnalysis) -> list[Block]:
    """Groups with one value of their swept quantity, in one line at the end."""
    lines = []
    for comparison in COMPARISONS:
        lonely = [g.id for g in analysis.groups[comparison.kind] if not g.comparable]
        if lonely:
            lines.append(f"{comparison.kind}: {', '.join(lonely)}")
    if not lines:
        return []
    return [Paragraph("Not analysed (one value of the swept quantity): " + "; ".join(lines) + ".")]
