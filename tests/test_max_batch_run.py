"""The Ray side of ``--find-max-batch`` without Ray: probe rows to outcomes, the round lines, and reuse of a table."""

from __future__ import annotations

import json

import pytest

from raysweep.core.errors import UsageError
from raysweep.core.params import TrialParams
from raysweep.core.status import TrialStatus
from raysweep.core.store import ResultStore, atomic_write_table
from raysweep.max_batch_run import FitToEdges, edge_line, outcomes_of, round_line
from raysweep.options import SweepOptions
from raysweep.planning.max_batch import (
    ProbeOutcome,
    SearchLimits,
    configuration_key,
    max_batch_path,
    max_batch_table,
    search_plan,
)


def params_json(params: TrialParams) -> str:
    return json.dumps(params.to_dict(), sort_keys=True)


def test_outcomes_follow_the_probes_order_and_a_probe_without_a_row_failed():
    probes = [
        TrialParams(engine="ddp", micro_batch_per_worker=64),
        TrialParams(engine="fsdp", micro_batch_per_worker=32),
    ]
    rows = [
        {"params_json": params_json(probes[1]), "status": "oom", "peak_mem_gib": 3.5, "throughput": None, "error": "x"},
    ]
    assert outcomes_of(probes, rows) == [
        ProbeOutcome(TrialStatus.FAILED, error="probe left no row"),
        ProbeOutcome(TrialStatus.OOM, 3.5, None, "x"),
    ]


def test_a_round_line_counts_configurations_batches_and_statuses():
    probes = [TrialParams(micro_batch_per_worker=b) for b in (64, 128, 32)]
    outcomes = [ProbeOutcome(TrialStatus.COMPLETED), ProbeOutcome(TrialStatus.OOM), ProbeOutcome(TrialStatus.COMPLETED)]
    assert round_line(2, probes, outcomes) == (
        "find-max-batch round 2: 3 configurations at micro batch 64, 128, 32: 2 completed, 1 oom"
    )
    assert (
        round_line(1, probes[:1], outcomes[:1])
        == "find-max-batch round 1: 1 configuration at micro batch 64: 1 completed"
    )


def test_an_edge_line_lists_every_probe():
    row = {"configuration": "{}", "max_micro_batch": None, "probes": 2, "probed_micro_batches": [16, 8],
           "probe_statuses": ["oom", "oom"]}  # fmt: skip
    assert edge_line(row) == "  max micro batch none (2 probes: 16 oom, 8 oom) for {}"


def test_a_dry_runs_plan_names_configurations_by_what_differs():
    trials = [TrialParams(engine=e, micro_batch_per_worker=b) for e in ("ddp", "fsdp") for b in (64, 16)]
    lines = search_plan(trials, SearchLimits(max_probes=3, resolution=4))
    assert lines[0].startswith("find-max-batch: 2 configurations would be probed") and "at most 3 probe" in lines[0]
    assert "within 4" in lines[0]
    assert lines[1:] == [
        "  configuration 0 engine=ddp: first probe at micro batch 16, grid [16, 64]",
        "  configuration 1 engine=fsdp: first probe at micro batch 16, grid [16, 64]",
    ]


def write_edges(store: ResultStore, trials: list[TrialParams], edge: int) -> None:
    row = {"configuration": configuration_key(trials[0]), "max_micro_batch": edge, "first_oom_micro_batch": edge + 1,
           "probes": 1, "probed_micro_batches": [edge], "probe_statuses": ["completed"]}  # fmt: skip
    atomic_write_table(max_batch_path(store), max_batch_table([row], store.sweep))


def test_an_existing_table_is_used_without_probing(tmp_path, capsys):
    store = ResultStore(tmp_path, "s")
    trials = [TrialParams(engine="ddp", micro_batch_per_worker=b) for b in (16, 64, 256)]
    write_edges(store, trials, 100)
    fit = FitToEdges(SweepOptions(), store, SearchLimits())
    kept, notes = fit(trials)  # a probe would need Ray: none is started
    assert [t.micro_batch_per_worker for t in kept] == [16, 64, 100] and notes == []
    assert "not searching again" in capsys.readouterr().out
    assert not (store.table_dir("max_batch") / "probes-1").exists()


def test_a_table_of_other_configurations_is_refused(tmp_path):
    store = ResultStore(tmp_path, "s")
    write_edges(store, [TrialParams(engine="fsdp")], 100)
    with pytest.raises(UsageError, match="no row for"):
        FitToEdges(SweepOptions(), store, SearchLimits())([TrialParams(engine="ddp")])
