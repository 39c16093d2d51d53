"""The best trial: one rule (raysweep.core.ranking) behind the summary, the API and the report; known answers."""

from __future__ import annotations

import json
import math

import pytest

import raysweep
from raysweep.core.errors import UsageError
from raysweep.core.ranking import DEFAULT_RANKING, Ranking, best_trial, chosen_ranking, ranked, ranking_of
from raysweep.core.store import ResultStore
from raysweep.planning.search_config import SearchConfig, search_record, with_choices
from raysweep.results.economy import sweep_economy
from raysweep.sweep import print_summary


def row(trial_id: str, status: str = "completed", **values) -> dict:
    return {"trial_id": trial_id, "status": status, "num_workers": 1, "micro_batch_per_worker": 16, **values}


ROWS = [
    row("t0", val_accuracy=0.90, final_loss=0.40, lr=1e-3),
    row("t1", val_accuracy=0.95, final_loss=0.20, lr=3e-3),
    row("t2", "failed", val_accuracy=0.99, final_loss=0.01, lr=5e-3),  # failed: no candidate whatever it says
    row("t3", "stopped", val_accuracy=0.97, final_loss=0.10, lr=2e-3),  # an early epoch's value: no candidate
    row("t4", val_accuracy=math.nan, final_loss=math.nan, lr=4e-3),
    row("t5", val_accuracy=None, final_loss=0.30, lr=6e-3),
]


def test_max_picks_the_highest_completed_value():
    best = best_trial(ROWS, Ranking("val_accuracy", "max"), searched=["lr"])
    assert (best.trial_id, best.value, best.params) == ("t1", 0.95, {"lr": 3e-3})
    assert best.row["final_loss"] == 0.20 and best.line() == "trial t1 val_accuracy=0.95 (lr=0.003)"


def test_min_picks_the_lowest_and_train_loss_reads_the_final_loss_column():
    best = best_trial(ROWS, Ranking("train_loss", "min"))
    assert (best.trial_id, best.metric, best.value) == ("t1", "train_loss", 0.20)


def test_ties_go_to_the_smaller_trial_id_whatever_the_order():
    rows = [row("b", val_accuracy=0.9), row("a", val_accuracy=0.9), row("c", val_accuracy=0.8)]
    assert best_trial(rows, Ranking("val_accuracy", "max")).trial_id == "a"
    assert best_trial(list(reversed(rows)), Ranking("val_accuracy", "max")).trial_id == "a"


def test_no_candidate_no_best():
    assert best_trial([ROWS[2], ROWS[3], ROWS[4]], Ranking("val_accuracy", "max")) is None
    assert best_trial([], DEFAULT_RANKING) is None


def test_ranked_puts_candidates_best_first_then_the_rest_in_their_order():
    order = [r["trial_id"] for r in ranked(ROWS, Ranking("val_accuracy", "max"))]
    assert order == ["t1", "t0", "t2", "t3", "t4", "t5"]
    order = [r["trial_id"] for r in ranked(ROWS, Ranking("train_loss", "min"))]
    assert order == ["t1", "t5", "t0", "t2", "t3", "t4"]


def test_the_params_are_the_searched_ones_then_those_that_vary():
    rows = [row("a", val_accuracy=0.8, lr=1e-3, seed=0), row("b", val_accuracy=0.9, lr=1e-3, seed=1)]
    assert best_trial(rows, Ranking("val_accuracy"), searched=["lr"]).params == {"lr": 1e-3, "seed": 1}


def test_the_ranking_comes_from_sweep_json_else_the_default():
    assert ranking_of({"metric": "train_loss", "mode": "min"}) == Ranking("train_loss", "min")
    assert ranking_of({"metric": None, "mode": None}) == DEFAULT_RANKING == Ranking("throughput", "max")
    assert ranking_of({}) == DEFAULT_RANKING  # a sweep from before the metric was recorded


def test_chosen_ranking_checks_the_metric_and_asks_for_a_mode_other_than_the_sweeps():
    manifest, columns = {"metric": "val_accuracy", "mode": "max"}, ["val_accuracy", "final_loss", "peak_mem_gib"]
    assert chosen_ranking(manifest, columns) == Ranking("val_accuracy", "max")
    assert chosen_ranking(manifest, columns, "peak_mem_gib", "min") == Ranking("peak_mem_gib", "min")
    with pytest.raises(UsageError, match="give mode='min' or 'max'"):
        chosen_ranking(manifest, columns, "peak_mem_gib")
    with pytest.raises(UsageError, match="did you mean 'peak_mem_gib'"):
        chosen_ranking(manifest, columns, "peak_mem_gb", "min")
    with pytest.raises(UsageError, match="mode must be min or max"):
        chosen_ranking(manifest, columns, mode="up")


def test_a_plain_grid_records_no_metric_unless_one_is_named_and_a_search_records_what_it_searched():
    plain = search_record(SearchConfig(), [{"micro_batch_per_worker": [16, 32]}], 1)
    assert (plain["metric"], plain["mode"], plain["search"]["searched"]) == (None, None, [])
    named = with_choices(SearchConfig(), "t", metric="train_loss", mode="min")
    assert search_record(named, [{}], 1)["metric"] == "train_loss"
    grids = [
        {"micro_batch_per_worker": [16], "lr": {"loguniform": [1e-4, 1e-2]}},
        {"micro_batch_per_worker": [32], "lr": {"loguniform": [2e-4, 2e-2]}},
    ]
    searched = search_record(with_choices(SearchConfig(), "t", search="optuna"), grids, 2)
    assert (searched["metric"], searched["mode"]) == ("val_accuracy", "max")
    assert searched["search"] == {
        "searcher": "optuna",
        "scheduler": None,
        "num_samples": 2,
        "distributions": [{"lr": {"loguniform": [1e-4, 1e-2]}}, {"lr": {"loguniform": [2e-4, 2e-2]}}],
        "searched": ["lr"],
    }


# ---- a sweep directory: the summary and the API ------------------------------------------------------------


def sweep_dir(tmp_path, manifest: dict):
    store = ResultStore(tmp_path, "s")
    store.root.mkdir(parents=True)
    rows = [
        {**r, "sweep": "s", "throughput": 100.0 + i, "micro_batch_per_worker": 16 * (i + 1)} for i, r in enumerate(ROWS)
    ]
    for r in rows:
        store.write_rows("trials", r["trial_id"], [r])
    store.write_sweep_json({"sweep": "s", **manifest})
    return store


def test_the_summary_is_ordered_by_the_metric_and_names_the_best(tmp_path, capsys):
    store = sweep_dir(tmp_path, {"metric": "val_accuracy", "mode": "max", "search": {"searched": ["lr"]}})
    print_summary(store, 10.0, sweep_economy(store.read("trials"), 1.0, None))
    out = capsys.readouterr().out
    lines = [line for line in out.splitlines() if line.split() and line.split()[0] in {r["trial_id"] for r in ROWS}]
    assert [line.split()[0] for line in lines] == ["t1", "t0", "t2", "t3", "t4", "t5"]
    header = next(line for line in out.splitlines() if line.startswith("trial_id"))
    assert header.split()[:4] == ["trial_id", "status", "lr", "micro_batch_per_worker"]
    assert "best: trial t1 val_accuracy=0.95 (lr=0.003 micro_batch_per_worker=32)" in out


def test_a_plain_grid_summary_ranks_by_throughput(tmp_path, capsys):
    store = sweep_dir(tmp_path, {"metric": None, "mode": None})
    print_summary(store, 10.0, sweep_economy(store.read("trials"), 1.0, None))
    assert "best: trial t5 throughput=105 (micro_batch_per_worker=96 lr=0.006)" in capsys.readouterr().out


def test_the_api_returns_the_best_trial_and_a_frame_best_first(tmp_path):
    store = sweep_dir(tmp_path, {"metric": "val_accuracy", "mode": "max", "search": {"searched": ["lr"]}})
    result = raysweep.load_sweep(store.root)
    best = result.best()
    assert (best.trial_id, best.metric, best.mode, best.value) == ("t1", "val_accuracy", "max", 0.95)
    assert best.params == {"lr": 3e-3, "micro_batch_per_worker": 32} and best.row["status"] == "completed"
    assert result.best("peak_mem_gib", "min") is None  # no trial recorded it
    assert result.best(mode="min").trial_id == "t0"
    frame = result.best_frame()
    assert list(frame["trial_id"]) == ["t1", "t0", "t2", "t3", "t4", "t5"]
    assert list(frame.columns) == result.trials.column_names
    json.dumps(best.params)  # plain values
