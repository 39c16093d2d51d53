"""Post-sweep analysis: scaling, batch size, communication, stragglers and time to accuracy.

``analyze(sweep_dir)`` writes report.md, report.html, scaling.parquet, summary.json and PNG plots.
"""

from analysis.api import analyze
from analysis.errors import AnalysisError

__all__ = ["AnalysisError", "analyze"]
