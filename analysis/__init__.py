"""Post-sweep analysis: scaling, batch size, communication, stragglers and time to accuracy.

``analyze(sweep_dir)`` writes report.md, report.html, scaling.parquet, summary.json and PNG plots;
``compare([sweep_dir, ...])`` writes one report of two or more sweeps side by side.

They load on first use: importing the package imports none of its modules, so ``python -m analysis.predict``
runs the module it names rather than a copy the package imported first (runpy's RuntimeWarning). (``compare``
lives in ``analysis.comparison``: a submodule named ``compare`` would replace the function once imported.)
"""

from __future__ import annotations

from typing import Any

__all__ = ["AnalysisError", "analyze", "compare"]


def __getattr__(name: str) -> Any:
    if name == "analyze":
        from analysis.api import analyze

        return analyze
    if name == "compare":
        from analysis.comparison import compare

        return compare
    if name == "AnalysisError":
        from analysis.rows.errors import AnalysisError

        return AnalysisError
    raise AttributeError(f"module 'analysis' has no attribute {name!r}")
