"""The examples of the README and the user guide (docs/*.md) run as printed against one real sweep: the Python API
example makes the sweep (2 trials of 2 CPU ranks), then the DuckDB and ``raysweep.query`` queries, the
``raysweep.query`` command line, every ``--dry-run`` command line and the TensorBoard tags the guide names are
checked against what that sweep wrote.

Each example is read at test time from the page that holds it (the block after ``<!-- example:NAME -->``), so the
test and the docs cannot diverge: an example that stops working fails here.
"""

from __future__ import annotations

import csv
import re
import shlex
import subprocess
from pathlib import Path

import duckdb
import pytest

from raysweep.core.schema import TABLES
from raysweep.query import connect, run_query
from tests.integration.conftest import PAGES, example, explain, page_with, run_cli, user_env
from tests.integration.test_watching import read_scalars

# the sweep name the query command line shows, a placeholder for the sweep this test made
PLACEHOLDER_SWEEP = "batch_grid-20261202-170000"


def statements(sql: str) -> list[str]:
    """The SQL block's statements, comments dropped."""
    body = "\n".join(line for line in sql.splitlines() if not line.lstrip().startswith("--"))
    return [s.strip() for s in body.split(";") if s.strip()]


@pytest.fixture(scope="module")
def sweep(python_api_sweep) -> dict:
    """The Python API example, run as printed in a fresh directory (conftest.python_api_sweep)."""
    return python_api_sweep


def test_the_python_api_example_runs_its_sweep_and_loads_it_back(sweep):
    assert Path(sweep["path"]).parent == sweep["work"] / "raysweep-results"
    assert sweep["report"] and Path(sweep["report"]).is_file()
    loaded = sweep["loaded"]
    assert sorted(t["micro_batch_per_worker"] for t in loaded) == [32, 64]
    assert {(t["status"], t["num_workers"], t["epochs"]) for t in loaded} == {("completed", 2, 1)}


def test_the_duckdb_queries_run_on_the_sweeps_files(sweep, monkeypatch):
    monkeypatch.chdir(sweep["work"])  # the example's paths are relative to where the sweep ran
    by_batch, per_epoch = (duckdb.sql(sql).fetchall() for sql in statements(example("duckdb")))
    assert [(row[1], row[2]) for row in by_batch] == [(32, 2), (64, 2)] and all(row[3] > 0 for row in by_batch)
    assert len(per_epoch) == 2 and all(row[2] is not None and row[3] > 0 for row in per_epoch)


def test_the_raysweep_query_examples_run_and_every_column_they_name_exists(sweep):
    con = connect(sweep["work"] / "raysweep-results")
    by_workers, to_accuracy, stragglers = (run_query(con, sql).to_pylist() for sql in statements(example("query")))
    (row,) = by_workers
    assert row["num_workers"] == 2 and row["trials"] == 2 and row["samples_per_s"] > 0
    assert row["comm_kernel_ms"] > 0 and 0 <= row["comm_overlap"] <= 1  # two ranks: measured
    assert len(to_accuracy) == 2  # one row per trial; NULL where 70% was not reached in one epoch
    assert all(t["train_seconds_to_70pct"] is None or t["train_seconds_to_70pct"] > 0 for t in to_accuracy)
    assert len(stragglers) == 2 and all(s["straggler_ratio"] >= 1 and s["mean_wait_ms"] >= 0 for s in stragglers)


def test_the_raysweep_query_command_line_writes_its_csv(sweep):
    name = Path(sweep["path"]).name
    (command,) = example("query-cli").splitlines()
    argv = shlex.split(command.replace(PLACEHOLDER_SWEEP, name))
    proc = subprocess.run(
        argv, cwd=sweep["work"], env=user_env(repo_on_path=True), capture_output=True, text=True, timeout=300
    )
    assert proc.returncode == 0, explain(proc)
    with open(sweep["work"] / "trials.csv", newline="") as f:
        rows = list(csv.DictReader(f))
    assert {r["sweep"] for r in rows} == {name} and len(rows) == 2


def test_the_tensorboard_tags_the_guide_names_are_the_ones_written(sweep):
    paragraph = page_with("**TensorBoard.**").split("**TensorBoard.**", 1)[1].split("\n\n", 1)[0]
    named = {tag for tag in re.findall(r"`([a-z_<>N0-9]+/[a-z_]+)`", paragraph)}
    expected = {tag.replace("<N>", str(rank)) for tag in named for rank in (0, 1)}
    runs = sorted((Path(sweep["path"]) / "tensorboard").iterdir())
    assert len(runs) == 2
    written = set().union(*(read_scalars(run) for run in runs))
    per_rank = {tag for tag in written if "/" in tag}
    assert per_rank == expected, (sorted(per_rank - expected), sorted(expected - per_rank))
    # every other scalar is named as a column of the tables, and so is every name the paragraph gives one
    columns = set(TABLES["epochs"].names) | set(TABLES["trials"].names)
    assert written - per_rank <= columns, sorted(written - per_rank - columns)
    named_plain = set(re.findall(r"`([a-z_]+)`", paragraph)) - set(TABLES)
    assert named_plain <= columns, sorted(named_plain - columns)
    assert {"train_loss", "val_accuracy", "throughput", "peak_mem_gib", "setup_s"} <= written


@pytest.mark.parametrize(
    "command",
    # each command once, though the README and a guide page may both show it
    list(
        dict.fromkeys(
            line.strip()
            for page in PAGES.values()
            for line in page.splitlines()
            if re.match(r"\s+python -m raysweep\.tune .*--dry-run", line)
        )
    ),
)
def test_the_dry_run_command_lines_plan_without_error(command):
    argv = shlex.split(command.split("#", 1)[0])
    proc = run_cli(*argv[3:], timeout=300)
    assert proc.returncode == 0 and "trial" in proc.stdout.lower(), explain(proc)
