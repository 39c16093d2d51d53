"""Sweeps side by side: one report with one series per sweep and the ratios of their matching trials."""

from __future__ import annotations

import json
import os
from pathlib import Path

import pandas as pd

from analysis.metrics.compute import SweepAnalysis, compute
from analysis.report.findings import headlines
from analysis.report.plots import Plots, Series, make_plots
from analysis.report.render import Block, Bullets, Heading, Image, Paragraph, Table, render_html, render_markdown
from analysis.rows.errors import AnalysisError
from analysis.rows.evidence import RULE
from analysis.rows.groups import NOT_A_DIFFERENCE, trial_params
from analysis.rows.load import SweepData, load_sweep

# Parameters that say where a trial ran rather than what it ran: trials equal in everything else match.
WHERE_IT_RAN = NOT_A_DIFFERENCE | {"device"}
RATIO_METRICS = ("throughput", "step_time_ms", "peak_mem_gib", "comm_exposed_ms")

SweepSource = str | os.PathLike | SweepData


def compare(sweeps: list[SweepSource], out_dir: str | Path | None = None, target: float | None = None) -> Path:
    """Write one comparison report of two or more sweeps; return the path of its report.md.

    ``sweeps`` are sweep directories or loaded ``SweepData``; ``out_dir`` defaults to
    ``<first sweep's results dir>/compare-<name>-<name>...``. Raises ``AnalysisError`` on unusable input.
    """
    data = [s if isinstance(s, SweepData) else load_sweep(s) for s in sweeps]
    if len(data) < 2:
        raise AnalysisError(f"a comparison needs two or more sweeps, got {len(data)}")
    series = [Series(f"{d.name} ({d.device_label})", compute(d, target)) for d in data]
    out = (
        Path(out_dir)
        if out_dir is not None
        else data[0].sweep_dir.parent / ("compare-" + "-".join(d.name for d in data))
    )
    try:
        out.mkdir(parents=True, exist_ok=True)
        plots = make_plots(series, out)
        blocks = comparison_blocks(series, plots)
        report = out / "report.md"
        report.write_text(render_markdown(blocks), encoding="utf-8")
        (out / "report.html").write_text(
            render_html(blocks, "Comparison: " + ", ".join(d.name for d in data)), encoding="utf-8"
        )
    except OSError as exc:
        raise AnalysisError(f"cannot write the comparison to {out}: {exc.strerror or exc}") from exc
    return report


def match_key(row: pd.Series) -> str:
    return json.dumps(
        {k: v for k, v in trial_params(row).items() if k not in WHERE_IT_RAN}, sort_keys=True, default=str
    )


def matching_ratios(base: SweepAnalysis, other: SweepAnalysis) -> pd.DataFrame:
    """Trials of ``other`` that ran what a trial of ``base`` ran, with each metric's ratio other / base (medians
    over repeats on either side)."""

    def medians(analysis: SweepAnalysis) -> pd.DataFrame:
        trials = analysis.data.trials.assign(
            comm_exposed_ms=analysis.per_trial.set_index("trial_id")["comm_exposed_ms"]
            .reindex(analysis.data.trials["trial_id"])
            .to_numpy()
        )
        keyed = trials.assign(key=trials.apply(match_key, axis=1))
        return keyed.groupby("key").agg(
            num_workers=("num_workers", "first"),
            micro_batch_per_worker=("micro_batch_per_worker", "first"),
            **{m: (m, "median") for m in RATIO_METRICS},
        )

    left, right = medians(base), medians(other)
    both = left.merge(right, left_index=True, right_index=True, suffixes=("_base", "_other"))
    if both.empty:
        return pd.DataFrame()

    table = pd.DataFrame(
        {"num_workers": both["num_workers_base"], "micro_batch_per_worker": both["micro_batch_per_worker_base"]}
    )
    for metric in RATIO_METRICS:
        table[f"{metric} ratio"] = both[f"{metric}_other"] / both[f"{metric}_base"]
    table = table[[c for c in table.columns if table[c].notna().any()]]
    return table.sort_values(["num_workers", "micro_batch_per_worker"], ignore_index=True)


def comparison_blocks(series: list[Series], plots: Plots) -> list[Block]:
    names = ", ".join(s.label for s in series)
    blocks: list[Block] = [
        Heading(f"Comparison: {names}", 1),
        Paragraph(f"**Rule:** {RULE}."),
        Heading("Findings per sweep"),
    ]
    for s in series:
        question = s.analysis.data.question
        blocks += [
            Paragraph(f"**{s.label}**" + (f": {question}" if question else "")),
            Bullets(headlines(s.analysis) or ["No finding."]),
            Paragraph(f"Comparisons: {s.analysis.family.sentence()}."),
        ]
    base = series[0]
    blocks.append(Heading("Matching trials"))
    for other in series[1:]:
        ratios = matching_ratios(base.analysis, other.analysis)
        if ratios.empty:
            blocks.append(
                Paragraph(
                    f"No trial of {other.label} ran what a trial of {base.label} ran (same "
                    "parameters but the device and seed)."
                )
            )
        else:
            blocks += [
                Paragraph(
                    f"{other.label} over {base.label}, per matching configuration (ratio > 1: larger in {other.label}):"
                ),
                Table.of(ratios),
            ]
    blocks.append(Heading("Plots"))
    blocks += [Image(path, plots.captions[name]) for name, path in plots.made.items()]
    if plots.skipped:
        blocks += [Paragraph("Not drawn:"), Bullets([f"`{name}`: {why}" for name, why in plots.skipped.items()])]
    return blocks
