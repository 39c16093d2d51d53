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

    ``dynamic=False``: a trial's shapes are fixed by its parameters, so a batch of another size (a last
    partial batch, validation's) gets a graph specialised to it, where dynamo would otherwise recompile
    the frame with a symbolic batch dimension and keep that slower graph for every size after it.
    """
    mode = {} if params.compile_mode == "default" else {"mode": params.compile_mode}
    return {"dynamic": False, **mode}


def compiled(module: torch.nn.Module, params: TrialParams) -> torch.nn.Module:
    """``module`` compiled in the trial's mode, or itself when the trial does not compile."""
    return torch.compile(module, **compile_options(params)) if compiles(params) else module
