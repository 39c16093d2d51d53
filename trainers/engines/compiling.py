"""torch.compile as the trial runs it (``compile``, ``compile_mode``), one rule for every engine.

The rank resolves ``compile=auto`` before it builds its engine (``trainers.train_loop``, with
``raysweep.core.compile_decision``), so an engine sees ``true`` or ``false`` only.
"""

from __future__ import annotations

import torch

from raysweep.core.params import TrialParams


def compiles(params: TrialParams) -> bool:
    """Whether the engine compiles its model: ``compile=true`` (``auto`` is resolved before any engine)."""
    if params.compile == "auto":
        raise ValueError("compile=auto reached an engine unresolved; resolve it with decide_compile first")
    return params.compile == "true"


def compile_options(params: TrialParams) -> dict:
    """torch.compile's keyword arguments for the trial's mode (its default mode is ``mode=None``).

    ``dynamic=False``: a worker group runs trial after trial in one process, and dynamo, seeing a second batch
    size of the same model, would otherwise recompile with a symbolic batch dimension and keep that graph for
    every later trial, whose small-batch steps then run slower than a graph specialised to their shape.
    """
    mode = {} if params.compile_mode == "default" else {"mode": params.compile_mode}
    return {"dynamic": False, **mode}


def compiled(module: torch.nn.Module, params: TrialParams) -> torch.nn.Module:
    """``module`` compiled in the trial's mode, or itself when the trial does not compile."""
    return torch.compile(module, **compile_options(params)) if compiles(params) else module
