"""raysweep: Ray Tune sweeps of data-parallel ViT training with Parquet results.

``raysweep.run_sweep``, ``raysweep.plan_sweep`` and ``raysweep.load_sweep`` (see ``raysweep.api``) load on first
use, so importing the package (as every worker and ``python -m raysweep.tune`` does) stays cheap.
"""

from __future__ import annotations

from typing import Any

__all__ = ["SweepPlan", "SweepResult", "load_sweep", "plan_sweep", "run_sweep"]


def __getattr__(name: str) -> Any:
    if name in __all__:
        from raysweep import api

        return getattr(api, name)
    raise AttributeError(f"module 'raysweep' has no attribute {name!r}")
