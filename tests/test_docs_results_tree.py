"""docs/results/ keeps per experiment its README, one summary table and the script that wrote it (and the
images a doc shows): no raw per-trial table, log or event file is tracked there. Git history keeps those."""

from __future__ import annotations

import re
import shutil
import subprocess
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[1]
# a sweep's per-trial tables (trials/, epochs/, ranks/, a report's scaling.parquet, the max-batch search's
# table: every Parquet file), terminal output and logs, TensorBoard event files, JSON lines
RAW = re.compile(r"\.parquet$|\.log$|\.jsonl$|events\.out\.tfevents")


def raw_files(paths: list[str]) -> list[str]:
    return [path for path in paths if RAW.search(path)]


def test_the_rule_names_every_kind_of_raw_file_and_spares_summaries_and_scripts():
    paths = [
        "docs/results/x/trials/0c4008b2.parquet",
        "docs/results/x/epochs/0c4008b2.parquet",
        "docs/results/x/ranks/0c4008b2.parquet",
        "docs/results/x/report/scaling.parquet",
        "docs/results/x/ab.log",
        "docs/results/x/plain_baseline.jsonl",
        "docs/results/x/tensorboard/t-w1/events.out.tfevents.1733.host",
    ]
    kept = ["docs/results/x/README.md", "docs/results/x/summary.csv", "docs/results/x/summarize.py"]
    kept += ["docs/results/x/run.sh", "docs/results/x/report/batch_throughput.png", "docs/results/x/sweep.json"]
    assert raw_files(paths + kept) == paths


def test_no_raw_per_trial_file_log_or_event_file_is_tracked_under_docs_results():
    if shutil.which("git") is None:
        pytest.skip("no git")
    listed = subprocess.run(["git", "ls-files", "docs/results"], cwd=ROOT, capture_output=True, text=True)
    if listed.returncode != 0:
        pytest.skip(f"not a git checkout: {listed.stderr.strip()}")
    raw = raw_files(listed.stdout.splitlines())
    assert not raw, (
        f"{len(raw)} raw file(s) tracked under docs/results (keep a summary table and its script instead: "
        f"docs/results/summarize_sweep.py): {raw[:20]}"
    )
