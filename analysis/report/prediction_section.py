"""The report's prediction section: the link probe's fits, the sweep's own hold-out check (each larger worker count
predicted from the smaller ones alone), and the step-time model's scaling beyond the measured worker counts beside
what was measured (``analysis.prediction.predict``). Only for a sweep with a link table and 1-rank trials."""

from __future__ import annotations

import pyarrow.parquet as pq

from analysis.metrics.compute import SweepAnalysis
from analysis.prediction.predict import LINKS_FILE, PREDICT_BEYOND, holdout_summary, report_holdout
from analysis.report.render import Block, Heading, Image, Paragraph, Table
from analysis.rows.errors import AnalysisError

PREDICTED_FIGURE = "predicted_scaling"  # its name in analysis.report.plots.FIGURES


def link_table(analysis: SweepAnalysis) -> Table:
    fits = pq.read_table(analysis.data.sweep_dir / LINKS_FILE).to_pandas()
    fits = fits[fits["row"] == "fit"]
    return Table(
        ["link class", "collective", "ranks", "latency (us)", "bandwidth (GB/s)", "median fit error"],
        [
            [r.link_class, r.collective, str(r.ranks), f"{r.alpha_s * 1e6:.1f}", f"{r.beta_bytes_per_s / 1e9:.3f}"]
            + [f"{r.fit_error:.1%}"]
            for r in fits.itertuples()
        ],
    )


def holdout_blocks(analysis: SweepAnalysis) -> list[Block]:
    """The held-out predictions against their measurements and the sentence on what they say of extrapolation;
    where the sweep has fewer than three worker counts, a line saying that its extrapolation is unchecked."""
    try:
        frame = report_holdout(analysis.data.sweep_dir, analysis.data.trials)
    except AnalysisError as exc:
        return [Paragraph(f"**Held out**: none ({exc}).")]
    if frame.empty:
        return [
            Paragraph(
                "**Held out**: none; the sweep has fewer than three worker counts from 1 rank, so nothing checks its "
                "predictions beyond the measured counts."
            )
        ]
    rows = [
        [p.scaling, str(p.num_workers), p.calibrated_on, str(p.micro_batch), f"{p.compute_ms:.1f}", f"{p.comm_ms:.1f}"]
        + [f"{p.contention_ms:.1f}", f"{p.step_time_ms:.1f}", f"{p.measured_step_time_ms:.1f}", f"{p.error:+.1%}"]
        for p in frame.itertuples()
    ]
    columns = ["scaling", "ranks", "calibrated on", "micro batch", "compute ms", "comm ms", "contention ms"]
    return [
        Paragraph(f"**Held out**, each count predicted from the smaller counts' trials only: {holdout_summary(frame)}"),
        Table(columns + ["predicted step ms", "measured step ms", "error"], rows),
    ]


def prediction_section(analysis: SweepAnalysis, figures: list[Image]) -> list[Block]:
    """[] where the sweep has no link table (``--probe-links``, ``python -m raysweep.probe``); ``figures`` (the
    report's ``PREDICTED_FIGURE`` where it was drawn) under the tables."""
    if not (analysis.data.sweep_dir / LINKS_FILE).is_file():
        return []
    try:
        frame = analysis.predictions
    except AnalysisError as exc:
        return [Heading("Predicted scaling"), Paragraph(f"No prediction: {exc}.")]
    rows = [
        [
            p.scaling,
            str(p.num_workers),
            str(p.micro_batch),
            f"{p.compute_ms:.1f}",
            f"{p.comm_ms:.1f}",
            f"{p.contention_ms:.1f}",
            f"{p.step_time_ms:.1f}",
            f"{p.measured_step_time_ms:.1f}" if p.measured else "(prediction)",
            f"{p.error:+.1%}" if p.measured and p.num_workers > 1 else "",
            p.missed_term if isinstance(p.missed_term, str) else "",
            f"{p.efficiency:.2f}",
            p.extrapolation if p.extrapolated else "",
        ]
        for p in frame.itertuples()
    ]
    columns = ["scaling", "ranks", "micro batch", "compute ms", "comm ms", "contention ms", "predicted step ms"]
    return [
        Heading("Predicted scaling"),
        Paragraph(
            "**Predictions**, from the 1-rank trials' compute, the link probe's fits (`links/links.parquet`) and "
            "what the multi-rank trials' coupling adds as a share of compute (contention), one node of "
            f"up to {PREDICT_BEYOND}x the measured ranks; measured step times beside them where the sweep ran that "
            "count (`python -m analysis.predict` for other shapes and links). Rows beyond the counts that calibrated "
            "the model say so (extrapolated)."
        ),
        link_table(analysis),
        *holdout_blocks(analysis),
        Table(columns + ["measured step ms", "error", "missed term", "efficiency", "extrapolated"], rows),
        *figures,
    ]
