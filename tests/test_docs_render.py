"""The docs' run figures are rendered from committed summaries: every block in README.md and docs/ equals what
``python docs/render.py`` makes of it, so a figure cannot be typed by hand nor drift from its summary."""

from __future__ import annotations

import importlib.util
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[1]


def load_render():
    spec = importlib.util.spec_from_file_location("docs_render", ROOT / "docs" / "render.py")
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    return module


render = load_render()


@pytest.mark.parametrize("doc", render.DOCS, ids=lambda p: str(p.relative_to(ROOT)))
def test_every_figure_block_equals_its_rendering_from_the_committed_summary(doc):
    text = doc.read_text()
    assert render.render_text(text) == text, f"{doc.name} differs: run `PYTHONPATH=. python docs/render.py`"


def test_every_registered_figure_appears_in_a_doc():
    used = set().union(*(render.used_figures(doc.read_text()) for doc in render.DOCS))
    assert set(render.FIGURES) <= used, sorted(set(render.FIGURES) - used)


def test_a_block_is_rewritten_on_its_own_lines_or_inline_and_text_outside_is_kept(monkeypatch):
    monkeypatch.setitem(render.FIGURES, "answer", lambda: "| a |\n|---:|\n| 42 |")
    monkeypatch.setitem(render.FIGURES, "word", lambda: "0.96-0.99x")
    inline = "after (<!-- figure:word -->{}<!-- /figure -->)\n"
    text = "before\n<!-- figure:answer -->\nstale\n<!-- /figure -->\n" + inline.format("1x")
    expected = "before\n<!-- figure:answer -->\n| a |\n|---:|\n| 42 |\n<!-- /figure -->\n" + inline.format("0.96-0.99x")
    assert render.render_text(text) == expected


def test_an_unknown_figure_is_an_error_naming_it():
    with pytest.raises(KeyError, match="no figure named 'nope'"):
        render.render_text("<!-- figure:nope -->\n\n<!-- /figure -->")


def test_the_mfu_is_the_trials_formula_over_the_spec_peak():
    # known answer, the H200 bench's micro batch 64: 2299.8 samples/s x 105.38 GFLOP / 989 TFLOP/s
    (row,) = [r for r in render.summary("h200-bench") if r["run"] == "compile" and r["batch"] == 64]
    assert row["flops_per_sample"] == pytest.approx(105.378e9, rel=1e-4) and row["peak_flops"] == 989e12
    assert row["mfu"] == pytest.approx(0.245, abs=5e-4)
    assert "| 64 | 2299.8 | **24.5%** | 30.9% |" in render.FIGURES["h200-mfu"]()
