"""A search answers: a tiny Optuna + ASHA sweep through the CLI names its best trial in the printed summary, on
the report's first screen and in ``load_sweep(...).best()``, and keeps its studies in ``<sweep>/optuna.db``."""

from __future__ import annotations

import re

import optuna

import raysweep
from tests.integration.conftest import explain, run_cli


def test_an_optuna_search_names_its_best_trial_everywhere_and_keeps_its_study(tmp_path):
    args = [
        "--space", "batch_grid", "--set", "micro_batch_per_worker=[32]", "--set", "lr={loguniform: [1.0e-4, 1.0e-2]}",
        "--epochs", "2", "--repeats", "1", "--search", "optuna", "--scheduler", "asha", "--metric", "val_accuracy",
        "--num-samples", "2", "--results-dir", "results", "--name", "searched", "--no-dashboard",
    ]  # fmt: skip
    proc = run_cli(*args, cwd=tmp_path, timeout=900, repo_on_path=True)
    assert proc.returncode == 0, explain(proc)
    found = re.search(r"^best: trial (\S+) val_accuracy=(\S+) \((.*lr=.*)\)$", proc.stdout, re.MULTILINE)
    assert found, explain(proc)
    best_id = found.group(1)

    sweep = tmp_path / "results" / "searched"
    report = (sweep / "report" / "report.md").read_text(encoding="utf-8")
    first_screen = report[: report.index("## Summary")]
    assert f"trial {best_id} has the best val_accuracy (max)" in first_screen, first_screen
    assert "Searched by an Optuna search" in first_screen and "over lr loguniform [0.0001, 0.01]" in first_screen

    best = raysweep.load_sweep(sweep).best()
    assert (best.trial_id, best.metric, best.mode) == (best_id, "val_accuracy", "max")
    assert 1e-4 <= best.params["lr"] <= 1e-2 and best.row["status"] == "completed"

    (name,) = [s.study_name for s in optuna.get_all_study_summaries(f"sqlite:///{sweep / 'optuna.db'}")]
    study = optuna.load_study(study_name=name, storage=f"sqlite:///{sweep / 'optuna.db'}")
    assert len(study.trials) == 2, study.trials
    assert best.value in [t.value for t in study.trials if t.value is not None]
