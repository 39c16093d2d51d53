"""The largest-micro-batch search over a stand-in probe whose memory edge is known, and the grid clipping."""

from __future__ import annotations

import dataclasses
import json

import pytest

from raysweep.core.errors import UsageError
from raysweep.core.params import TrialParams
from raysweep.core.status import TrialStatus
from raysweep.planning.max_batch import (
    MAX_BATCH,
    BatchSearch,
    ProbeOutcome,
    SearchLimits,
    clip_to_edges,
    configuration_key,
    configurations,
    find_max_batches,
    max_batch_table,
    probe_trials,
)


class EdgeProbe:
    """Fits up to a known micro batch per engine; peak memory 0.1 GiB and throughput 10/s per sample."""

    def __init__(self, edges: dict[str, int], fail: dict[str, int] | None = None):
        self.edges = edges
        self.fail = fail or {}
        self.rounds: list[list[tuple[str, int]]] = []

    def __call__(self, trials: list[TrialParams]) -> list[ProbeOutcome]:
        self.rounds.append([(t.engine, t.micro_batch_per_worker) for t in trials])
        outcomes = []
        for t in trials:
            b = t.micro_batch_per_worker
            if self.fail.get(t.engine) == b:
                outcomes.append(ProbeOutcome(TrialStatus.FAILED, error="RuntimeError: NCCL timeout"))
            elif b <= self.edges[t.engine]:
                outcomes.append(ProbeOutcome(TrialStatus.COMPLETED, peak_mem_gib=0.1 * b, throughput=10.0 * b))
            else:
                outcomes.append(ProbeOutcome(TrialStatus.OOM, peak_mem_gib=0.1 * b))
        return outcomes

    def probed(self, engine: str) -> list[int]:
        return [b for round_ in self.rounds for e, b in round_ if e == engine]


def space(engines=("ddp",), batches=(16,)) -> list[TrialParams]:
    return [TrialParams(engine=e, micro_batch_per_worker=b) for e in engines for b in batches]


def search(edge: int, start: int = 16, **limits) -> tuple[dict, list[int]]:
    probe = EdgeProbe({"ddp": edge})
    (row,) = find_max_batches(space(batches=(start,)), probe, SearchLimits(**limits))
    return row, probe.probed("ddp")


def test_doubles_then_bisects_to_the_exact_edge():
    row, probed = search(edge=37)
    assert probed == [16, 32, 64, 48, 40, 36, 38, 37]
    assert row["max_micro_batch"] == 37
    assert row["first_oom_micro_batch"] == 38
    assert row["probes"] == 8
    assert row["probed_micro_batches"] == probed
    assert row["probe_statuses"] == ["completed", "completed", "oom", "oom", "oom", "completed", "oom", "completed"]


def test_the_row_carries_the_peak_memory_and_throughput_of_the_edge_probe():
    row, _ = search(edge=37)
    assert row["peak_mem_gib"] == pytest.approx(3.7)
    assert row["throughput"] == pytest.approx(370.0)


def test_a_start_that_does_not_fit_bisects_downwards():
    row, probed = search(edge=5)
    assert probed == [16, 8, 4, 6, 5]
    assert (row["max_micro_batch"], row["first_oom_micro_batch"]) == (5, 6)


def test_when_nothing_fits_the_edge_is_null():
    row, probed = search(edge=0)
    assert probed == [16, 8, 4, 2, 1]
    assert row["max_micro_batch"] is None
    assert row["peak_mem_gib"] is None and row["throughput"] is None


def test_the_probe_count_is_bounded_and_the_best_fit_so_far_is_kept():
    row, probed = search(edge=37, max_probes=4)
    assert probed == [16, 32, 64, 48]
    assert row["max_micro_batch"] == 32 and row["probes"] == 4


def test_doubling_stops_at_the_largest_batch_allowed():
    row, probed = search(edge=10**6, max_micro_batch=100)
    assert probed == [16, 32, 64, 100]
    assert row["max_micro_batch"] == 100 and row["first_oom_micro_batch"] is None


def test_resolution_stops_bisection_early():
    row, probed = search(edge=37, resolution=8)
    assert probed == [16, 32, 64, 48, 40]
    assert row["max_micro_batch"] == 32


def test_no_batch_is_probed_twice_and_an_oom_is_not_retried():
    for edge in (0, 1, 2, 3, 5, 37, 100, 1000, 4095, 4096):
        _, probed = search(edge=edge)
        assert len(probed) == len(set(probed)), edge


def test_recording_a_batch_again_is_refused():
    s = BatchSearch(16, SearchLimits())
    s.record(16, ProbeOutcome(TrialStatus.OOM))
    with pytest.raises(ValueError, match="probed already"):
        s.record(16, ProbeOutcome(TrialStatus.COMPLETED))


def test_a_failure_other_than_oom_ends_that_configurations_search():
    probe = EdgeProbe({"ddp": 37, "fsdp": 37}, fail={"ddp": 64})
    rows = find_max_batches(space(engines=("ddp", "fsdp")), probe, SearchLimits())
    ddp, fsdp = rows
    assert probe.probed("ddp") == [16, 32, 64]
    assert ddp["max_micro_batch"] == 32 and ddp["error"] == "RuntimeError: NCCL timeout"
    assert fsdp["max_micro_batch"] == 37 and fsdp["error"] is None


def test_each_configuration_finds_its_own_edge_in_shared_rounds():
    probe = EdgeProbe({"ddp": 37, "fsdp": 100, "deepspeed": 20})
    rows = find_max_batches(space(engines=("ddp", "fsdp", "deepspeed"), batches=(16, 64)), probe, SearchLimits())
    assert [json.loads(r["configuration"])["engine"] for r in rows] == ["ddp", "fsdp", "deepspeed"]
    assert [r["max_micro_batch"] for r in rows] == [37, 100, 20]
    assert probe.rounds[0] == [("ddp", 16), ("fsdp", 16), ("deepspeed", 16)]  # from the grid's smallest
    assert len(probe.rounds) == max(r["probes"] for r in rows)


def test_probe_trials_are_short_single_epoch_trials_at_the_batch():
    base = TrialParams(engine="fsdp", micro_batch_per_worker=16, epochs=5, checkpoint_every=1, lr=0.01)
    probe = probe_trials(base, 48)
    assert probe.micro_batch_per_worker == 48
    assert (probe.epochs, probe.warmup_steps, probe.max_steps_per_epoch) == (1, 2, 5)
    assert (probe.checkpoint_every, probe.profile_steps) == (0, 0)
    assert (probe.engine, probe.lr) == ("fsdp", 0.01)


def test_a_fixed_global_batch_is_refused_naming_the_field():
    with pytest.raises(UsageError, match="global_batch=256"):
        find_max_batches([TrialParams(global_batch=256)], EdgeProbe({"deepspeed": 1}), SearchLimits())


def test_limits_below_one_are_refused_naming_the_field():
    with pytest.raises(UsageError, match="max_probes"):
        SearchLimits(max_probes=0)


def rows_for(edges: dict[str, int | None], trials: list[TrialParams]) -> list[dict]:
    keys = {t.engine: configuration_key(t) for t in trials}
    return [{"configuration": keys[e], "max_micro_batch": edge} for e, edge in edges.items()]


def test_a_grid_is_clipped_to_the_edge_with_the_edge_run_once():
    trials = space(batches=(16, 32, 64, 128))
    kept, notes = clip_to_edges(trials, rows_for({"ddp": 50}, trials))
    assert [t.micro_batch_per_worker for t in kept] == [16, 32, 50]
    assert notes == []


def test_a_single_batch_runs_at_the_edge():
    trials = space(batches=(32,))
    kept, _ = clip_to_edges(trials, rows_for({"ddp": 200}, trials))
    assert [t.micro_batch_per_worker for t in kept] == [200]


def test_repeats_of_a_grid_point_are_kept_and_unfit_configurations_dropped():
    trials = space(engines=("ddp", "fsdp"), batches=(16, 64)) * 2  # num_samples=2
    kept, notes = clip_to_edges(trials, rows_for({"ddp": 40, "fsdp": None}, trials))
    assert [(t.engine, t.micro_batch_per_worker) for t in kept] == [("ddp", 16), ("ddp", 16), ("ddp", 40), ("ddp", 40)]
    assert len(notes) == 1 and "no micro batch fits" in notes[0] and '"engine": "fsdp"' in notes[0]


def test_the_repeats_of_a_configuration_are_searched_once_and_each_keeps_its_seed_after_clipping():
    trials = [dataclasses.replace(t, seed=r, repeat=r) for r in range(3) for t in space(batches=(16, 64, 128))]
    assert len(configurations(trials)) == 1
    kept, _ = clip_to_edges(trials, rows_for({"ddp": 40}, trials))
    assert sorted((t.micro_batch_per_worker, t.repeat, t.seed) for t in kept) == [
        (b, r, r) for b in (16, 40) for r in range(3)
    ]


def test_rows_make_a_max_batch_table():
    probe = EdgeProbe({"ddp": 37})
    table = max_batch_table(find_max_batches(space(), probe, SearchLimits()), sweep="s1")
    assert table.schema == MAX_BATCH
    row = table.to_pylist()[0]
    assert (row["sweep"], row["max_micro_batch"], row["probes"]) == ("s1", 37, 8)
    assert "micro_batch_per_worker" not in json.loads(row["configuration"])


def test_a_probe_outcome_reads_a_trials_row():
    outcome = ProbeOutcome.of_trial_row({"status": "oom", "peak_mem_gib": 7.5, "throughput": None, "error": "OOM"})
    assert outcome == ProbeOutcome(TrialStatus.OOM, 7.5, None, "OOM") and not outcome.fits
