"""Post-sweep analysis: scaling, batch size, communication, stragglers and time to accuracy.

``analyze(sweep_dir)`` writes report.md, report.html, scaling.parquet, summary.json and PNG plots;
``compare([sweep_dir, ...])`` writes one report of two or more sweeps side by side.
"""

from analysis.api import analyze
from analysis.compare import compare
from analysis.errors import AnalysisError

__all__ = ["AnalysisError", "analyze", "compare"]
