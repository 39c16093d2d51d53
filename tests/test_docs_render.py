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


def load_summarize_logs():
    spec = importlib.util.spec_from_file_location("summarize_logs", ROOT / "docs" / "results" / "summarize_logs.py")
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    return module


summarize_logs = load_summarize_logs()


def test_summarize_logs_reads_ab_runs_their_medians_and_pairs():
    text = (
        "base 1 rc=0 exited 104.5 s after launch\n"
        "base\n"
        "  duty_cycle: median 0.394 (0.248-0.402) runs [0.248, 0.394, 0.402]\n"
        "paired duty_cycle, base - new: [-0.16, -0.01, 0.0]\n"
    )
    rows = summarize_logs.rows_of(text)
    assert ("base 1", "exited after launch", 104.5) in rows
    assert ("base", "duty_cycle median", 0.394) in rows and ("base", "duty_cycle high", 0.402) in rows
    assert [r for r in rows if r[1] == "duty_cycle" and r[0].startswith("base ") and "-" not in r[0]] == [
        ("base 1", "duty_cycle", 0.248),
        ("base 2", "duty_cycle", 0.394),
        ("base 3", "duty_cycle", 0.402),
    ]
    assert ("base - new 1", "duty_cycle", -0.16) in rows


def test_summarize_logs_reads_an_economy_line_with_its_lists_and_phases():
    line = (
        "new1 setup_s [5.66, 0.37] teardown_s [0.01, 0.011] wall_s 81.1 duty 0.877 | launch to first step 31.0 "
        'duty from launch 0.669 | first trial\'s phases {"worker_started": 4.049}'
    )
    rows = summarize_logs.rows_of(line)
    assert rows == [
        ("new1", "setup_s[0]", 5.66),
        ("new1", "setup_s[1]", 0.37),
        ("new1", "teardown_s[0]", 0.01),
        ("new1", "teardown_s[1]", 0.011),
        ("new1", "wall_s", 81.1),
        ("new1", "duty", 0.877),
        ("new1", "launch to first step", 31.0),
        ("new1", "duty from launch", 0.669),
        ("new1", "first trial's phases.worker_started", 4.049),
    ]


def test_summarize_logs_reads_timelines_trial_tables_bench_lines_and_json():
    text = (
        "base-1: seconds after launch\n"
        "    14.82  process started: TrainController\n"
        "    +6.89 s  process started: RayTrainWorker\n"
        "\n"
        "trial_id  status     micro_batch_per_worker  throughput  setup_s\n"
        "--------  ---------  ----------------------  ----------  -------\n"
        "9aada84a  completed  64                      1626        25.17\n"
        "\n"
        "  full stack: 2657 img/s = 0.984 x synthetic, data_wait_fraction 0.0002\n"
        'round 1 pixels {"images_per_s": 7251.1, "decode": "none", "compile": false}\n'
    )
    rows = summarize_logs.rows_of(text)
    assert ("base-1", "process started: TrainController", 14.82) in rows
    assert ("base-1", "process started: RayTrainWorker", 6.89) in rows  # counted from the first trial's start
    assert ("9aada84a", "throughput", 1626.0) in rows and ("9aada84a", "setup_s", 25.17) in rows
    assert ("full stack", "ratio", 0.984) in rows and ("full stack", "data_wait_fraction", 0.0002) in rows
    assert ("round 1 pixels (line 10)", "images_per_s", 7251.1) in rows
    assert ("round 1 pixels (line 10)", "compile", 0.0) in rows


def test_every_figure_module_registers_figures_of_its_own_except_the_shared_helpers():
    package = render.figures
    owners = {render_fn.__module__.rsplit(".", 1)[-1] for render_fn in render.FIGURES.values()}
    modules = {path.stem for path in (ROOT / "docs" / "figures").glob("*.py")} - {"__init__", "common"}
    assert modules <= owners, sorted(modules - owners)
    assert package.load_all() is render.FIGURES
