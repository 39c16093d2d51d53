"""What report.md and report.html say, in reading order: headline findings, then tables and plots."""

from __future__ import annotations

import pandas as pd

from analysis.batch import KNEE_FRACTION
from analysis.compute import SweepAnalysis
from analysis.findings import headlines, left_out_sentence
from analysis.groups import COMPARISONS, group_label, varying_columns
from analysis.plots import Plots
from analysis.render import Block, Bullets, Heading, Image, Paragraph, Table

TOP_ROWS = 15  # longer per-trial tables are cut here; scaling.parquet has every row

CAPTIONS = {
    "speedup": "Strong-scaling speedup vs workers; dotted: ideal linear speedup, solid: Amdahl fit",
    "efficiency": "Parallel efficiency vs workers (strong: S·base/n, weak: T(base)/T(n)); dotted: ideal 100%",
    "batch_throughput": "Throughput per worker vs micro batch and global batch; star: knee",
    "batch_overheads": "Share of step time in the gradient all-reduce and waiting for data, stacked, vs micro batch",
    "batch_accuracy": "Validation accuracy and final training loss vs micro batch",
    "time_to_accuracy": "Wall time to the target validation accuracy, per trial",
}


def build_report(analysis: SweepAnalysis, plots: Plots) -> list[Block]:
    blocks: list[Block] = [
        Heading(f"Sweep {analysis.data.name}: scaling and batch-size report", 1),
        Paragraph(left_out_sentence(analysis)),
        Heading("Headline findings"),
        Bullets(headlines(analysis)),
    ]
    blocks += group_section(analysis)
    blocks += strong_section(analysis, plots)
    blocks += weak_section(analysis, plots)
    blocks += batch_section(analysis, plots)
    blocks += comm_section(analysis)
    blocks += accuracy_section(analysis, plots)
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


def images(plots: Plots, *names: str) -> list[Block]:
    return [Image(plots.made[n], CAPTIONS[n]) for n in names if n in plots.made]


def rounded(frame: pd.DataFrame, percent: tuple[str, ...] = ()) -> Table:
    frame = frame.copy()
    for column in percent:
        frame[column] = [None if pd.isna(v) else f"{v:.1%}" for v in frame[column]]
    return Table.of(frame)


def cut(frame: pd.DataFrame) -> tuple[pd.DataFrame, list[Block]]:
    if len(frame) <= TOP_ROWS:
        return frame, []
    return frame.head(TOP_ROWS), [Paragraph(f"First {TOP_ROWS} of {len(frame)} rows; all are in `scaling.parquet`.")]


def group_section(analysis: SweepAnalysis) -> list[Block]:
    blocks: list[Block] = [Heading("Groups")]
    for comparison in COMPARISONS:
        groups = analysis.groups[comparison.kind]
        if not groups:
            continue
        scope = f"rows with data_scaling={comparison.data_scaling}" if comparison.data_scaling else "all rows"
        ignored = ", ".join(f"`{c}`" for c in comparison.derived)
        blocks.append(
            Paragraph(
                f"**{comparison.kind.capitalize()}** ({scope}) sweeps `{comparison.swept}`; a group is the rows "
                f"equal in {', '.join(f'`{c}`' for c in comparison.key_columns)} ({ignored} move with the swept "
                "value and are not compared)."
            )
        )
        columns = varying_columns(groups)
        blocks.append(
            Table(
                ["group", "differs by", f"{comparison.swept} values", "trials", "note"],
                [
                    [
                        g.id,
                        group_label(g, columns),
                        ", ".join(f"{v:g}" for v in g.swept_values),
                        str(len(g.trial_ids)),
                        "" if g.comparable else "too few points (<2): not analysed",
                    ]
                    for g in groups
                ],
            )
        )
    return blocks


def strong_section(analysis: SweepAnalysis, plots: Plots) -> list[Block]:
    if not analysis.strong:
        return []
    blocks: list[Block] = [Heading("Strong scaling (fixed total samples)")]
    for result in analysis.strong:
        if not result.base_is_one:
            blocks.append(
                Paragraph(
                    f"Group {result.group.id} has no 1-worker trial: the base is {result.base_workers} workers, so "
                    "speedup, efficiency and Karp–Flatt are relative to it (p = n / base)."
                )
            )
    fits = [
        [r.group.id, str(r.base_workers)]
        + (
            [
                f"{r.amdahl.serial_fraction:.4f}",
                f"{r.amdahl.t1_s:.4g}",
                f"{r.amdahl.rms_residual_s:.3g}",
                f"{r.amdahl.max_speedup:.3g}×" if r.amdahl.max_speedup else "∞",
            ]
            if r.amdahl
            else ["—"] * 4
        )
        for r in analysis.strong
    ]
    blocks.append(
        Table(["group", "base workers", "Amdahl f", "fitted T(1) [s]", "RMS residual [s]", "max speedup 1/f"], fits)
    )
    rows = pd.concat([r.rows.assign(group=r.group.id) for r in analysis.strong], ignore_index=True)
    rows = rows[["group", "trial_id", "num_workers", "train_time_s", "speedup", "efficiency", "karp_flatt"]]
    rows, note = cut(rows)
    blocks += [rounded(rows, ("efficiency",)), *note, *images(plots, "speedup", "efficiency")]
    return blocks


def weak_section(analysis: SweepAnalysis, plots: Plots) -> list[Block]:
    if not analysis.weak:
        return []
    blocks: list[Block] = [Heading("Weak scaling (samples per worker fixed)")]
    blocks.append(
        Table(
            ["group", "base workers", "Gustafson α"],
            [
                [r.group.id, str(r.base_workers), "—" if r.gustafson_alpha is None else f"{r.gustafson_alpha:.4f}"]
                for r in analysis.weak
            ],
        )
    )
    rows = pd.concat([r.rows.assign(group=r.group.id) for r in analysis.weak], ignore_index=True)
    rows = rows[
        [
            "group",
            "trial_id",
            "num_workers",
            "train_time_s",
            "efficiency",
            "throughput_per_worker",
            "scaled_speedup",
            "gustafson_speedup",
        ]
    ]
    rows, note = cut(rows)
    blocks += [rounded(rows, ("efficiency",)), *note]
    if not analysis.strong:
        blocks += images(plots, "efficiency")
    return blocks


def batch_section(analysis: SweepAnalysis, plots: Plots) -> list[Block]:
    if not analysis.batch:
        return []
    blocks: list[Block] = [
        Heading("Batch size"),
        Paragraph(
            f"The knee is the smallest micro batch reaching {KNEE_FRACTION:.0%} of the group's best throughput per "
            "worker. Recommendation per group:"
        ),
        Bullets([f"{r.group.id}: {r.recommendation}" for r in analysis.batch]),
    ]
    for result in analysis.batch:
        points = result.points[
            [
                "micro_batch_per_worker",
                "global_batch",
                "throughput_per_worker",
                "comm_fraction",
                "data_wait_fraction",
                "peak_mem_gib",
                "val_accuracy",
                "final_loss",
                "trials",
            ]
        ]
        blocks += [
            Paragraph(f"Group {result.group.id}:"),
            rounded(points, ("comm_fraction", "data_wait_fraction", "val_accuracy")),
        ]
    return blocks + images(plots, "batch_throughput", "batch_overheads", "batch_accuracy")


def comm_section(analysis: SweepAnalysis) -> list[Block]:
    trials = analysis.per_trial
    comm = trials.dropna(subset=["comm_fraction"]).sort_values("comm_fraction", ascending=False)
    blocks: list[Block] = [Heading("Communication and stragglers")]
    if comm.empty:
        blocks.append(Paragraph("No trial recorded comm_fraction."))
    else:
        comm, note = cut(
            comm[
                [
                    "trial_id",
                    "num_workers",
                    "micro_batch_per_worker",
                    "comm_time_ms",
                    "step_time_ms",
                    "comm_fraction",
                    "data_wait_fraction",
                ]
            ]
        )
        blocks += [
            Paragraph("Share of each step spent in one gradient all-reduce, highest first:"),
            rounded(comm, ("comm_fraction", "data_wait_fraction")),
            *note,
        ]
    if analysis.stragglers.empty:
        blocks.append(Paragraph("No straggler analysis: the ranks table has no trial with two or more ranks."))
        return blocks
    lagging, note = cut(analysis.stragglers.sort_values("straggler_ratio", ascending=False))
    blocks += [
        Paragraph(
            "Straggler ratio = slowest rank's compute time per step over the median rank's; the cost "
            "is the mean time the other ranks wait for it per step."
        ),
        rounded(lagging, ("straggler_cost_fraction",)),
        *note,
    ]
    return blocks


def accuracy_section(analysis: SweepAnalysis, plots: Plots) -> list[Block]:
    blocks: list[Block] = [Heading("Time to accuracy")]
    if analysis.target is None:
        return blocks + [Paragraph(f"Not computed: {analysis.target_source}.")]
    trials = analysis.per_trial.sort_values("time_to_accuracy_s", na_position="last")
    missed = trials["time_to_accuracy_s"].isna().sum()
    blocks.append(
        Paragraph(
            f"Target: validation accuracy ≥ {analysis.target:.4f} ({analysis.target_source}). Time is wall time from "
            f"trial start (`epochs.elapsed_s`) at the end of the first epoch reaching it; {missed} trial(s) never "
            "reached it (shown as —)."
        )
    )
    rows, note = cut(
        trials[
            ["trial_id", "num_workers", "micro_batch_per_worker", "val_accuracy", "time_to_accuracy_s", "epoch_reached"]
        ]
    )
    return blocks + [rounded(rows, ("val_accuracy",)), *note, *images(plots, "time_to_accuracy")]
