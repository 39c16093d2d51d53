"""The report's prediction section: the link probe's fits, and the step-time model's scaling beyond the measured
worker counts beside what was measured (``analysis.predict``). Only for a sweep with a link table and 1-rank trials."""

from __future__ import annotations

import pyarrow.parquet as pq

from analysis.compute import SweepAnalysis
from analysis.errors import AnalysisError
from analysis.predict import LINKS_FILE, PREDICT_BEYOND
from analysis.render import Block, Heading, Image, Paragraph, Table

PREDICTED_FIGURE = "predicted_scaling"  # its name in analysis.plots.FIGURES


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
            f"{p.step_time_ms:.1f}",
            f"{p.measured_step_time_ms:.1f}" if p.measured else "(prediction)",
            f"{p.error:+.1%}" if p.measured and p.num_workers > 1 else "",
            p.missed_term if isinstance(p.missed_term, str) else "",
            f"{p.efficiency:.2f}",
        ]
        for p in frame.itertuples()
    ]
    columns = ["scaling", "ranks", "micro batch", "compute ms", "comm ms", "predicted step ms", "measured step ms"]
    return [
        Heading("Predicted scaling"),
        Paragraph(
            "**Predictions**, from the 1-rank trials' compute and the link probe's fits (`links/links.parquet`), "
            "one node of up to "
            f"{PREDICT_BEYOND}x the measured ranks; measured step times beside them where the sweep ran that count "
            "(`python -m analysis.predict` for other shapes and links)."
        ),
        link_table(analysis),
        Table(columns + ["error", "missed term", "efficiency"], rows),
        *figures,
    ]
