"""torch.compile's on-disk caches, one set per sweep and node, shared by the sweep's ranks.

A worker group drops a trial's compiled graphs before the next trial (``trainers.trial_server.start_clean``),
so each compiled trial traces its model again; what makes that cheap is Inductor's FX graph and
AOTAutograd caches and Triton's kernel cache on disk.  Kept under the sweep's name, a later trial of the
same model and shape in any group of the sweep finds its kernels there, while a new sweep starts cold,
as its own figures must.  Under the user's home, not a shared temporary directory: cached code is executed.
"""

from __future__ import annotations

from pathlib import Path

CACHE_ROOT = Path("~/.cache/raysweep/compile")


def compile_cache_env(sweep: str, root: Path = CACHE_ROOT) -> dict[str, str]:
    """Environment variables that point a sweep's processes at its compiler caches on their node."""
    base = root.expanduser() / sweep
    return {
        "TORCHINDUCTOR_CACHE_DIR": str(base / "inductor"),
        "TRITON_CACHE_DIR": str(base / "triton"),
        "TORCHINDUCTOR_FX_GRAPH_CACHE": "1",
        "TORCHINDUCTOR_AUTOGRAD_CACHE": "1",
    }
