"""raysweep: Ray Tune sweeps of data-parallel ViT training with Parquet results.

The public API (``__all__``; see ``raysweep.api``) loads on first use, so importing the package (as every
worker and ``python -m raysweep.tune`` does) stays cheap.
"""

from __future__ import annotations

import importlib

# Each public name and the module that defines it.
PUBLIC = {
    "run_sweep": "raysweep.api",
    "plan_sweep": "raysweep.api",
    "load_sweep": "raysweep.api",
    "resume_sweep": "raysweep.api",
    "SweepResult": "raysweep.api",
    "SweepPlan": "raysweep.api",
    "SweepOptions": "raysweep.options",
    "SearchLimits": "raysweep.planning.max_batch",
    "UsageError": "raysweep.core.errors",
}
__all__ = list(PUBLIC)


def __getattr__(name: str):
    if name in PUBLIC:
        return getattr(importlib.import_module(PUBLIC[name]), name)
    raise AttributeError(f"module 'raysweep' has no attribute {name!r}")


def __dir__() -> list[str]:
    return sorted(__all__)
