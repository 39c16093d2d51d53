"""``raysweep.run_sweep`` from a Python script: the embedded default runs and returns its tables; the terminal
carries raysweep's lines, not Ray Train's per-report dicts, the PlacementGroupCleaner's warnings nor Tune's boxes."""

from __future__ import annotations

import json
import os
import subprocess
import sys
import textwrap

from tests.integration.conftest import REPO, explain

SCRIPT = textwrap.dedent(
    """
    import json, sys
    import raysweep

    result = raysweep.run_sweep(
        "batch_grid",
        overrides={"micro_batch_per_worker": [32], "epochs": 1},
        results_dir=sys.argv[1],
        name="api",
        dashboard=False,
        repeats=1,
    )
    again = raysweep.load_sweep(result.path)
    print("RESULT " + json.dumps({
        "path": str(result.path),
        "report": str(result.report) if result.report else None,
        "trials": result.trials.select(["status", "micro_batch_per_worker", "epochs"]).to_pylist(),
        "epochs": result.epochs.num_rows,
        "ranks": result.ranks.num_rows,
        "loaded_trials": again.trials.num_rows,
        "economy": json.loads((result.path / "sweep.json").read_text())["economy"],
        "setup_s": result.trials.column("setup_s").to_pylist(),
    }))
    """
)


def test_run_sweep_returns_the_tables_of_the_embedded_default_quietly(tmp_path):
    env = {**os.environ, "PYTHONUNBUFFERED": "1"}
    env.pop("RAY_ADDRESS", None)
    proc = subprocess.run(
        [sys.executable, "-c", SCRIPT, str(tmp_path)],
        cwd=REPO,
        env=env,
        capture_output=True,
        text=True,
        timeout=600,
    )
    assert proc.returncode == 0, explain(proc)
    (line,) = [line for line in proc.stdout.splitlines() if line.startswith("RESULT ")]
    result = json.loads(line.removeprefix("RESULT "))
    assert result["path"] == str(tmp_path / "api")
    assert result["trials"] == [{"status": "completed", "micro_batch_per_worker": 32, "epochs": 1}]
    assert result["epochs"] == 1 and result["ranks"] == 1 and result["loaded_trials"] == 1
    economy = result["economy"]
    assert 0 < economy["duty_cycle"] < 1 and economy["median_setup_s"] == result["setup_s"][0] > 0, economy
    assert economy["median_later_setup_s"] is None  # one trial: no later ones
    assert f"duty cycle {economy['duty_cycle']:.2f}" in proc.stdout
    # One trial leaves the analysis nothing to compare: then there is no report, and the sweep says why.
    assert (result["report"] is None) == ("report not written" in proc.stdout), explain(proc)
    terminal = proc.stdout + proc.stderr
    assert "Reporting training result" not in terminal, explain(proc)
    assert "TrainingReport(" not in terminal, explain(proc)
    assert "PlacementGroupCleaner" not in terminal, explain(proc)
    # Tune's per-fit experiment box and results pointer, and its no-metrics warning
    for chatter in ("Configuration for experiment", "View detailed results here", "Failed to fetch metrics"):
        assert chatter not in terminal, explain(proc)
    assert terminal.count("Ray's logs:") == 1, explain(proc)
