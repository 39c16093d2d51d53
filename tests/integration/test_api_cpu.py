"""``raysweep.run_sweep`` from a Python script: the embedded default runs and returns its tables; the terminal
carries raysweep's lines, not Ray Train's per-report dicts, the PlacementGroupCleaner's warnings nor Tune's boxes.

The script is the user guide's Python API example (2 trials of 2 CPU ranks), run once for the session
(conftest.python_api_sweep) and checked here for what ``run_sweep`` returns and prints."""

from __future__ import annotations

import statistics

from tests.integration.conftest import explain


def test_run_sweep_returns_the_tables_of_the_embedded_default_quietly(python_api_sweep):
    result, proc = python_api_sweep, python_api_sweep["proc"]
    trials = sorted(result["loaded"], key=lambda t: t["started_at"])
    assert [(t["status"], t["epochs"], t["num_workers"]) for t in trials] == [("completed", 1, 2)] * 2
    # one epochs row per trial (one epoch each), one ranks row per rank
    assert result["epochs"] == 2 and result["ranks"] == 4, explain(proc)
    economy = result["economy"]
    setups = [t["setup_s"] for t in trials]
    assert 0 < economy["duty_cycle"] < 1 and economy["median_setup_s"] == statistics.median(setups) > 0, economy
    assert economy["median_later_setup_s"] == setups[1]  # the first trial's start is left out
    assert f"duty cycle {economy['duty_cycle']:.2f}" in proc.stdout
    # A sweep whose analysis fails still returns its tables: then there is no report, and the sweep says why.
    assert (result["report"] is None) == ("report not written" in proc.stdout), explain(proc)
    terminal = proc.stdout + proc.stderr
    assert "Reporting training result" not in terminal, explain(proc)
    assert "TrainingReport(" not in terminal, explain(proc)
    assert "PlacementGroupCleaner" not in terminal, explain(proc)
    # Tune's per-fit experiment box and results pointer, and its no-metrics warning
    for chatter in ("Configuration for experiment", "View detailed results here", "Failed to fetch metrics"):
        assert chatter not in terminal, explain(proc)
    assert terminal.count("Ray's logs:") == 1, explain(proc)
