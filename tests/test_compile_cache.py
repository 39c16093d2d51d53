"""The compiler caches are the sweep's own: one directory per sweep name, Inductor's and Triton's inside it."""

from __future__ import annotations

from pathlib import Path

import pytest
import torch

from raysweep.core.params import TrialParams
from raysweep.runtime.caches.compile_cache import compile_cache_env
from trainers.engines.compiling import compile_options


def test_each_sweep_has_its_own_inductor_and_triton_caches(tmp_path):
    a, b = compile_cache_env("sweep-a", tmp_path), compile_cache_env("sweep-b", tmp_path)
    assert Path(a["TORCHINDUCTOR_CACHE_DIR"]) == tmp_path / "sweep-a" / "inductor"
    assert Path(a["TRITON_CACHE_DIR"]) == tmp_path / "sweep-a" / "triton"
    assert a["TORCHINDUCTOR_CACHE_DIR"] != b["TORCHINDUCTOR_CACHE_DIR"]
    assert a["TORCHINDUCTOR_FX_GRAPH_CACHE"] == "1" and a["TORCHINDUCTOR_AUTOGRAD_CACHE"] == "1"


@pytest.mark.parametrize(
    ("mode", "options"),
    [
        ("default", {"dynamic": False}),
        ("reduce-overhead", {"dynamic": False, "mode": "reduce-overhead"}),
        ("max-autotune-no-cudagraphs", {"dynamic": False, "mode": "max-autotune-no-cudagraphs"}),
    ],
)
def test_the_compile_mode_reaches_torch_compile_as_its_mode_with_shapes_kept_static(mode, options):
    # static: a batch of another size gets a graph specialised to its shape, not the symbolic-batch graph
    # dynamo would otherwise switch to at the second size
    assert compile_options(TrialParams.from_dict({"compile": True, "compile_mode": mode})) == options


def test_an_unknown_compile_mode_is_refused_naming_the_modes():
    from raysweep.core.errors import UsageError

    with pytest.raises(UsageError, match="compile_mode='fast' is not one of default, reduce-overhead"):
        TrialParams.from_dict({"compile": True, "compile_mode": "fast"}).validate()


def test_a_second_batch_size_gets_its_own_static_graph():
    # As a trial's last partial batch or its validation batches do, before any reset of dynamo's caches.
    graphs = []

    def recording_backend(gm, example_inputs):
        graphs.append([tuple(t.shape) if isinstance(t, torch.Tensor) else type(t).__name__ for t in example_inputs])
        return gm.forward

    torch._dynamo.reset()
    options = compile_options(TrialParams.from_dict({"compile": True}))
    for batch in (4, 8, 4):
        model = torch.compile(torch.nn.Linear(3, 2), backend=recording_backend, **options)
        model(torch.randn(batch, 3))
    # dynamo's automatic dynamic shapes would hand the second graph a symbolic batch size (a SymInt input)
    assert graphs == [[(2, 3), (2,), (4, 3)], [(2, 3), (2,), (8, 3)]]
