"""raysweep in a Jupyter notebook, run by nbclient in a real IPython kernel: a tiny sweep with ``run_sweep``, and the
cells that show its result and a plan display them as HTML tables (what a notebook renders), with a short repr as
their plain text."""

from __future__ import annotations

import textwrap

import pytest

CELLS = [
    """
    import raysweep

    result = raysweep.run_sweep(
        "batch_grid",
        overrides={"micro_batch_per_worker": [32], "epochs": 1},
        results_dir="results",
        name="notebook",
        dashboard=False,
        repeats=1,
    )
    """,
    "result",
    "result.to_pandas()[['trial_id', 'status', 'micro_batch_per_worker']]",
    "raysweep.plan_sweep('batch_grid', assume_gpus=8, repeats=1)",
]


@pytest.fixture(scope="module")
def notebook(tmp_path_factory):
    """The notebook after a kernel ran it, in a working directory of its own (the sweep's relative results)."""
    nbformat = pytest.importorskip("nbformat")
    nbclient = pytest.importorskip("nbclient")
    pytest.importorskip("ipykernel")
    cwd = tmp_path_factory.mktemp("notebook")
    nb = nbformat.v4.new_notebook(cells=[nbformat.v4.new_code_cell(textwrap.dedent(c).strip()) for c in CELLS])
    client = nbclient.NotebookClient(nb, timeout=600, kernel_name="python3", resources={"metadata": {"path": cwd}})
    client.execute()  # a cell that raises fails here, with its traceback
    return nb, cwd


def shown(cell) -> dict[str, str]:
    """What a cell displays: its execute_result's data by MIME type."""
    (result,) = [o for o in cell.outputs if o.output_type == "execute_result"]
    return result.data


def test_the_sweeps_result_shows_as_an_html_table_of_its_trials(notebook):
    nb, cwd = notebook
    data = shown(nb.cells[1])
    assert "<table>" in data["text/html"] and "<th>throughput</th>" in data["text/html"]
    assert data["text/html"].count("<tr>") == 2  # the header and the one trial
    text = data["text/plain"]
    assert text.startswith("SweepResult(") and "notebook', 1 trial: 1 completed" in text, text
    assert (cwd / "results" / "notebook" / "trials").is_dir()
    # a report (when the analysis wrote one) is named in the repr, and its answer shown under the table
    written = (cwd / "results" / "notebook" / "report" / "report.md").is_file()
    assert written == ("report=" in text) == ("<p><b>Answer:</b> " in data["text/html"]), data["text/html"]


def test_to_pandas_shows_as_a_dataframe(notebook):
    nb, _ = notebook
    data = shown(nb.cells[2])
    assert "<table" in data["text/html"] and "completed" in data["text/html"] and "32" in data["text/plain"]


def test_a_plan_shows_as_the_dry_runs_trial_table(notebook):
    nb, _ = notebook
    data = shown(nb.cells[3])
    assert data["text/plain"].startswith("SweepPlan(space='batch_grid', 5 trials, cluster='64 CPU + 8 GPU')")
    assert "<table>" in data["text/html"] and data["text/html"].count("<tr>") == 1 + 5
