"""docs/results/ keeps per experiment its README, its summary table(s) and the script(s) that wrote them, and
beyond those only what a doc, a test, a figure (``docs/figures/``) or an experiment's own script reads: no raw per-trial
table, log, event file, terminal table, timeline, profile or bench output is tracked there. Git history keeps
those."""

from __future__ import annotations

import fnmatch
import re
import shutil
import subprocess
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[1]
RESULTS = "docs/results/"
# what any experiment may keep: its README, its summary tables, the scripts that ran it or wrote them
KEPT = re.compile(r"(^|/)(README\.md|summary[^/]*\.csv|[^/]+\.py|[^/]+\.sh)$")
# and these (globs), each read by something named beside it; a new one is added here with its reader
READ = {
    # the README's example sweeps (docs/results/cpu_examples.py writes them; README and docs/figures read them)
    "cpu-batch-grid/sweep.json": "docs/figures/example_sweeps.py (run_line)",
    "cpu-batch-grid/report/*": "README.md, the example sweep's report",
    "cpu-strong-scaling/sweep.json": "docs/figures/example_sweeps.py (run_line)",
    "cpu-strong-scaling/report/*": "README.md, the example sweep's report",
    # each sweep's own economy, which the sweeps' summaries do not repeat
    "cpu-shared-workers/*/sweep.json": "docs/figures/shared_workers.py (economy)",
    "h200-shared-workers/*/sweep.json": "docs/figures/shared_workers.py (economy)",
    "h200x2-strong-scaling/sweep.json": "docs/results/h200x2-strong-scaling/predict.py",
    # inputs, not outputs
    "h100-engines-1gpu/space.yaml": "the sweep's command (its README)",
    "h100-megatron/space.yaml": "the sweep's command (its README)",
    # what the validation measured, read again by validate.py --from and tests/test_cpu16_validation.py
    "cpu16-prediction/measured/*.csv": "docs/results/cpu16-prediction/validate.py (measured_in)",
    "cpu16-prediction/host_sharing.csv": "docs/figures/prediction_validation.py (cpu16_host_sharing)",
    "study-prediction/inputs.json": "docs/figures/study_prediction.py",
}
# never kept, whatever reads it: a sweep's per-trial tables (every Parquet file), logs, TensorBoard event files
RAW = re.compile(r"\.parquet$|\.log$|\.jsonl$|events\.out\.tfevents")


def not_allowed(paths: list[str]) -> list[str]:
    """The tracked paths under docs/results/ that are neither kept by every experiment nor read by something."""
    out = []
    for path in paths:
        inside = path.removeprefix(RESULTS)
        top_level_note = inside.endswith(".md") and "/" not in inside  # such as h200-spaces.md: a doc
        kept = KEPT.search(inside) or top_level_note or any(fnmatch.fnmatchcase(inside, read) for read in READ)
        if RAW.search(path) or not kept:
            out.append(path)
    return out


def test_the_rule_refuses_raw_outputs_and_spares_summaries_scripts_and_what_is_read():
    raw = [
        "docs/results/x/trials/0c4008b2.parquet",
        "docs/results/x/report/scaling.parquet",
        "docs/results/x/ab.log",
        "docs/results/x/plain_baseline.jsonl",
        "docs/results/x/tensorboard/t-w1/events.out.tfevents.1733.host",
        "docs/results/x/bench.json",
        "docs/results/x/bench.md",
        "docs/results/x/call1/table.txt",
        "docs/results/x/call1/timeline.txt",
        "docs/results/x/gaps.txt",
        "docs/results/x/trials.txt",
        "docs/results/x/profile1.txt",
        "docs/results/x/importtime.txt.gz",
        "docs/results/x/call1/new1.launch",
        "docs/results/x/sweep.json",
        "docs/results/x/report/report.md",
        "docs/results/x/report/batch_throughput.png",
        "docs/results/h200-duty-cycle/report/report.md",
        "docs/results/cpu-batch-grid/report/scaling.parquet",
        "docs/results/cpu-shared-workers/shared_1/trials/0c4008b2.parquet",
    ]
    kept = [
        "docs/results/x/README.md",
        "docs/results/x/summary.csv",
        "docs/results/x/summary-logs.csv",
        "docs/results/x/summarize.py",
        "docs/results/x/run.sh",
        "docs/results/h200-spaces.md",
        "docs/results/cpu-batch-grid/report/batch_throughput.png",
        "docs/results/h200-shared-workers/h200_shared/sweep.json",
    ]
    assert not_allowed(raw + kept) == raw


def test_every_kept_reader_exception_is_still_tracked():
    tracked = tracked_files()
    missing = [read for read in READ if not any(fnmatch.fnmatchcase(p.removeprefix(RESULTS), read) for p in tracked)]
    assert not missing, f"READ names files no longer tracked (drop them from it): {missing}"


def test_docs_results_holds_only_readmes_summaries_scripts_and_what_is_read():
    extra = not_allowed(tracked_files())
    assert not extra, (
        f"{len(extra)} file(s) under docs/results that no doc, test or script reads (keep a summary table and its "
        f"script instead: docs/results/summarize_logs.py, summarize_sweep.py; or name the reader in READ): "
        f"{extra[:20]}"
    )


def tracked_files() -> list[str]:
    if shutil.which("git") is None:
        pytest.skip("no git")
    listed = subprocess.run(["git", "ls-files", "docs/results"], cwd=ROOT, capture_output=True, text=True)
    if listed.returncode != 0:
        pytest.skip(f"not a git checkout: {listed.stderr.strip()}")
    return listed.stdout.splitlines()
