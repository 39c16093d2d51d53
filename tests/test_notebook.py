"""raysweep in a notebook: the package lists its public API and imports it on first use; a result and a plan have
a short repr and an HTML table (the CLI's summary, the dry run's trial table); a result's tables as DataFrames."""

from __future__ import annotations

import subprocess
import sys
from pathlib import Path

import pytest

import raysweep
from raysweep.core.errors import UsageError
from raysweep.core.store import ResultStore
from raysweep.results.summary_table import SUMMARY_MEASURES
from raysweep.results.text_table import html_table

PUBLIC = [
    "SearchLimits",
    "SweepOptions",
    "SweepPlan",
    "SweepResult",
    "UsageError",
    "load_sweep",
    "plan_sweep",
    "resume_sweep",
    "run_sweep",
]


def test_the_package_lists_its_public_api_and_each_name_resolves():
    assert dir(raysweep) == PUBLIC and sorted(raysweep.__all__) == PUBLIC
    for name in PUBLIC:
        assert getattr(raysweep, name).__name__ == name
    assert raysweep.UsageError is UsageError
    with pytest.raises(AttributeError, match="has no attribute 'runsweep'"):
        raysweep.runsweep  # noqa: B018


def test_importing_the_package_imports_none_of_the_api():
    code = "import sys, raysweep; print(sorted(m for m in ('raysweep.api', 'ray', 'pyarrow') if m in sys.modules))"
    root = Path(__file__).resolve().parents[1]
    result = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, check=True, cwd=root)
    assert result.stdout.strip() == "[]"


def test_html_table_escapes_every_cell():
    assert html_table(["a<b", "c"], [["1 & 2", "<i>"]]) == (
        "<table><thead><tr><th>a&lt;b</th><th>c</th></tr></thead>"
        "<tbody><tr><td>1 &amp; 2</td><td>&lt;i&gt;</td></tr></tbody></table>"
    )


def two_trial_sweep(tmp_path: Path) -> ResultStore:
    """A sweep directory of two trials that differ in their micro batch, one completed and one out of memory."""
    store = ResultStore(tmp_path, "nb")
    for tid, batch, status, throughput in (("t1", 64, "oom", None), ("t2", 32, "completed", 812.345678)):
        row = {"status": status, "num_workers": 1, "micro_batch_per_worker": batch, "throughput": throughput}
        store.write_rows("trials", tid, [row])
    store.write_rows("epochs", "t2", [{"epoch": 0, "val_accuracy": 0.5}, {"epoch": 1, "val_accuracy": 0.75}])
    return store


def test_a_results_repr_is_one_line_and_its_html_is_the_clis_summary_table(tmp_path):
    store = two_trial_sweep(tmp_path)
    result = raysweep.load_sweep(store.root)
    assert repr(result) == f"SweepResult({str(store.root)!r}, 2 trials: 1 completed, 1 oom)"
    page = result._repr_html_()
    header = ["trial_id", "status", "micro_batch_per_worker", *SUMMARY_MEASURES]  # the varied column, the measures
    assert f"<thead><tr>{''.join(f'<th>{h}</th>' for h in header)}</tr></thead>" in page
    # the CLI's order (by micro batch) and its figures (4 significant digits)
    assert page.index("<td>t2</td>") < page.index("<td>t1</td>") and "<td>812.3</td>" in page
    assert "report" not in page  # none written


def test_a_results_html_carries_the_reports_question_and_answer(tmp_path):
    store = two_trial_sweep(tmp_path)
    report = store.root / "report" / "report.md"
    report.parent.mkdir()
    lines = ["# Sweep nb", "", "**Question:** which batch?", "", "**Answer:** 32 <fastest>.", "", "**Answer:** x"]
    report.write_text("\n".join(lines))
    result = raysweep.load_sweep(store.root)
    assert repr(result).endswith(f", report={str(report)!r})")
    page = result._repr_html_()
    assert "<p><b>Question:</b> which batch?</p>\n<p><b>Answer:</b> 32 &lt;fastest&gt;.</p>" in page
    assert page.count("Answer:") == 1 and f"report: <code>{report}</code>" in page


def test_to_pandas_gives_each_table_and_refuses_an_unknown_one_naming_the_closest(tmp_path):
    result = raysweep.load_sweep(two_trial_sweep(tmp_path).root)
    trials = result.to_pandas()
    assert sorted(trials["trial_id"]) == ["t1", "t2"] and list(trials.columns) == result.trials.column_names
    assert result.to_pandas("epochs")["val_accuracy"].tolist() == [0.5, 0.75]
    assert result.to_pandas("ranks").empty and result.to_pandas("max_batch").empty
    with pytest.raises(UsageError, match=r"unknown table 'epoch'; choose from trials, epochs, ranks, max_batch "
                                         r"\(did you mean 'epochs'\?\)"):  # fmt: skip
        result.to_pandas("epoch")


def test_a_plans_repr_is_one_line_and_its_html_is_the_dry_runs_trial_table():
    plan = raysweep.plan_sweep("batch_grid", overrides={"num_workers": [1, 2]}, assume_gpus=8, repeats=1)
    assert repr(plan) == "SweepPlan(space='batch_grid', 10 trials, cluster='64 CPU + 8 GPU')"
    page = plan._repr_html_()
    assert page.count("<table>") == 1 and page.count("<tr>") == 1 + len(plan.trials)  # the header and a row each
    assert "<th>micro_batch_per_worker</th>" in page and "<th>needs</th>" in page
    assert "<p>cluster: 64 CPU + 8 GPU</p>" in page and page.endswith("<p>10 trials; nothing started.</p>")
