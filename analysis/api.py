"""``analyze``: one sweep directory in, a report directory out."""

from __future__ import annotations

import json
from pathlib import Path

import pyarrow as pa
import pyarrow.parquet as pq

from analysis.metrics.compute import SweepAnalysis, compute
from analysis.prediction.predict import predict_scaling
from analysis.report.plots import make_plots
from analysis.report.render import render_html, render_markdown
from analysis.report.report import build_report
from analysis.report.summary import build_summary
from analysis.rows.errors import AnalysisError
from analysis.rows.load import load_sweep

__all__ = ["analyze", "predict_scaling", "write_report"]


def analyze(sweep_dir: str | Path, target: float | None = None, out_dir: str | Path | None = None) -> Path:
    """Analyse the completed trials of ``sweep_dir`` and write the report; return the path of report.md.

    ``target`` is the held-out accuracy for time to accuracy (default: 90% of the best in the sweep);
    ``out_dir`` defaults to ``<sweep_dir>/report``. Raises ``AnalysisError`` on unusable input.
    """
    analysis = compute(load_sweep(sweep_dir), target)
    out = Path(out_dir) if out_dir is not None else Path(sweep_dir) / "report"
    try:
        out.mkdir(parents=True, exist_ok=True)
        return write_report(analysis, out)
    except OSError as exc:
        raise AnalysisError(f"cannot write the report to {out}: {exc.strerror or exc}") from exc


def write_report(analysis: SweepAnalysis, out: Path) -> Path:
    plots = make_plots(analysis, out)
    blocks = build_report(analysis, plots)
    report = out / "report.md"
    report.write_text(render_markdown(blocks), encoding="utf-8")
    (out / "report.html").write_text(render_html(blocks, f"Sweep {analysis.data.name}"), encoding="utf-8")
    pq.write_table(pa.Table.from_pandas(analysis.per_trial, preserve_index=False), out / "scaling.parquet")
    summary = build_summary(analysis, plots)
    (out / "summary.json").write_text(json.dumps(summary, indent=2, allow_nan=False) + "\n", encoding="utf-8")
    return report
