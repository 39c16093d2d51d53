"""The compiler caches are the sweep's own: one directory per sweep name, Inductor's and Triton's inside it."""

from __future__ import annotations

from pathlib import Path

import pytest

from raysweep.core.params import TrialParams
from raysweep.runtime.compile_cache import compile_cache_env
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
        ("default", {}),
        ("reduce-overhead", {"mode": "reduce-overhead"}),
        ("max-autotune-no-cudagraphs", {"mode": "max-autotune-no-cudagraphs"}),
    ],
)
def test_the_compile_mode_reaches_torch_compile_as_its_mode(mode, options):
    assert compile_options(TrialParams.from_dict({"compile": True, "compile_mode": mode})) == options


def test_an_unknown_compile_mode_is_refused_naming_the_modes():
    from raysweep.core.errors import UsageError

    with pytest.raises(UsageError, match="compile_mode='fast' is not one of default, reduce-overhead"):
        TrialParams.from_dict({"compile": True, "compile_mode": "fast"}).validate()
