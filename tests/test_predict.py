"""The scaling prediction: link fits recovered from synthetic timings, step times computed by hand."""

from __future__ import annotations

import json

import pandas as pd
import pyarrow.parquet as pq
import pytest

from analysis.prediction.coupling import CoupledProbe, bucket_bytes, coupled_from_table, probed_shares
from analysis.prediction.link_model import (
    COLLECTIVES,
    INTER_NODE,
    INTRA_NODE,
    LinkFit,
    Links,
    cost_terms,
    fit_link,
    fit_rows,
    links_from_table,
    named_link,
    uniform,
)
from analysis.prediction.predict import (
    VALIDATION_SUMMARY,
    holdout,
    holdout_summary,
    main,
    predict_from_trials,
    validation_line,
    worker_counts,
)
from analysis.prediction.step_model import (
    ComputeCurve,
    Engine,
    StepTerms,
    Transfer,
    comm_s,
    fit_contention,
    step_s,
    step_traffic,
)
from analysis.rows.errors import AnalysisError
from raysweep.core.schema import table_from_rows


def test_ring_cost_terms():
    assert cost_terms("all_reduce", 4) == (6.0, 1.5)
    assert cost_terms("reduce_scatter", 4) == (3.0, 0.75)
    assert cost_terms("all_to_all", 1) == (0.0, 0.0)


@pytest.mark.parametrize("collective", COLLECTIVES)
def test_a_link_with_known_latency_and_bandwidth_is_recovered_from_its_timings(collective):
    alpha, beta = 25e-6, 1.2e9
    ranks = [p for p in (2, 4, 8) for _ in range(9)]
    sizes = [2 ** (10 + 2 * i) for _ in (2, 4, 8) for i in range(9)]
    times = [LinkFit(alpha, beta).time_s(collective, n, p) for p, n in zip(ranks, sizes)]
    fit = fit_link(collective, ranks, sizes, times)
    assert fit.alpha_s == pytest.approx(alpha, rel=1e-6)
    assert fit.beta_bytes_per_s == pytest.approx(beta, rel=1e-6)


def test_fit_rows_fit_each_link_class_and_collective_and_read_back():
    truth = {INTRA_NODE: LinkFit(5e-6, 20e9), INTER_NODE: LinkFit(40e-6, 1e9)}
    points = [
        {"row": "point", "link_class": c, "collective": "all_reduce", "ranks": p, "bytes": n, "time_s": t}
        for c, link in truth.items()
        for p in (2, 4)
        for n in (1024, 2**20, 2**26)
        for t in [link.time_s("all_reduce", n, p)]
    ]
    fits = fit_rows(points)
    assert [(f["link_class"], f["collective"]) for f in fits] == [
        (INTER_NODE, "all_reduce"),
        (INTRA_NODE, "all_reduce"),
    ]
    assert all(f["fit_error"] < 1e-9 for f in fits)
    links = links_from_table(table_from_rows("links", [{"sweep": "s", **r} for r in points + fits]))
    assert links.fit(INTER_NODE, "all_reduce").beta_bytes_per_s == pytest.approx(1e9)
    assert links.fit(INTRA_NODE, "all_gather").alpha_s == pytest.approx(5e-6)  # falls back to all-reduce's


def test_hierarchical_all_reduce_by_hand():
    links = Links("t", {**uniform("a", INTRA_NODE, 1e-6, 100e9).fits, **uniform("b", INTER_NODE, 1e-5, 1e9).fits})
    n = 8e6
    # 2 nodes x 4 ranks: reduce-scatter and all-gather on 4 ranks within, all-reduce of the buffer on 2 nodes across
    intra = 2 * (3 * 1e-6 + 0.75 * n / 100e9)
    inter = 2 * 1e-5 + 1.0 * n / 1e9
    assert links.collective_s("all_reduce", n, 4, 2) == pytest.approx(intra + inter)
    assert links.collective_s("all_reduce", n, 1, 2) == pytest.approx(inter)
    assert links.collective_s("all_reduce", n, 4, 1) == pytest.approx(6e-6 + 1.5 * n / 100e9)


def test_step_traffic_per_engine():
    params = 1_000_000
    assert step_traffic(Engine("ddp"), params) == [Transfer("all_reduce", 4e6, 1)]
    assert step_traffic(Engine("ddp"), 10 * params) == [Transfer("all_reduce", 4e7, 2)]  # 25 MiB buckets
    bf16 = Engine("deepspeed", 2, grad_bytes=2, param_bytes=2, grad_accum=4)
    assert step_traffic(bf16, params) == [Transfer("reduce_scatter", 2e6, 1, 4), Transfer("all_gather", 2e6, 1, 1)]
    assert step_traffic(Engine("fsdp", reshard_after_forward=False), params) == [
        Transfer("all_gather", 4e6, 1, 1),
        Transfer("reduce_scatter", 4e6, 1, 1),
    ]
    row = {"engine": "deepspeed", "amp": "deepspeed", "precision": "bf16", "zero_stage": 0, "grad_accum_steps": 1}
    assert Engine.of_trial(row).grad_bytes == 2
    assert Engine.of_trial({**row, "amp": "autocast"}).grad_bytes == 4


def test_step_time_bounds():
    assert step_s(100.0, 10.0, 0.0) == 110.0
    assert step_s(100.0, 10.0, 1.0) == 100.0
    assert step_s(5.0, 10.0, 1.0) == 10.0  # never shorter than its collectives
    assert step_s(100.0, 10.0, 0.5, slowest=1.5) == 155.0


def test_compute_curve():
    one = ComputeCurve((64.0,), (100.0,))
    assert one.at(16) == 25.0 and one.source(16) == "proportional"
    line = ComputeCurve((16.0, 64.0), (30.0, 90.0))  # 10 ms fixed + 1.25 ms a sample
    assert line.at(32) == pytest.approx(50.0) and line.at(64) == 90.0 and line.source(32) == "line"


def trial(trial_id: str, workers: int, micro: int, step_ms: float, **more) -> dict:
    params = {"model": "m", "engine": "ddp", "precision": "fp32", "zero_stage": 0, "num_workers": workers}
    return {
        "trial_id": trial_id,
        "status": "completed",
        "num_workers": workers,
        "micro_batch_per_worker": micro,
        "grad_accum_steps": 1,
        "global_batch": micro * workers,
        "step_time_ms": step_ms,
        "trainable_params": 1_000_000,
        "engine": "ddp",
        "precision": "fp32",
        "amp": "autocast",
        "zero_stage": 0,
        "comm_overlap": None,
        "comm_kernel_ms": None,
        "params_json": json.dumps({**params, "micro_batch_per_worker": micro}),
        **more,
    }


def test_a_strong_scaling_prediction_computed_by_hand():
    trials = pd.DataFrame([trial("a", 1, 64, 100.0), trial("b", 4, 16, 33.0, comm_kernel_ms=6.0)])
    links = uniform("t", INTRA_NODE, 10e-6, 1e9)
    # calibrated on the 1-rank trial alone: the idle link, no contention
    frame = predict_from_trials(trials, links, nodes=1, gpus_per_node=4, calibrate_on={1})
    strong = frame[frame["scaling"] == "strong"].set_index("num_workers")
    assert list(strong.index) == [1, 2, 4]
    four = strong.loc[4]
    # compute 100 ms x 16/64; a 4 MB fp32 all-reduce on 4 ranks: 6 x 10 us + 1.5 x 4e6 B / 1e9 B/s = 6.06 ms
    assert four.compute_ms == 25.0 and four.compute_source == "proportional"
    assert four.comm_ms == pytest.approx(6.06)
    assert four.step_time_ms == pytest.approx(31.06)  # no overlap measured: the bound of none
    assert four.step_time_full_overlap_ms == pytest.approx(25.0)
    assert four.throughput == pytest.approx(64 / 0.03106)
    assert four.speedup == pytest.approx(100.0 / 31.06)
    assert four.efficiency == pytest.approx(100.0 / 31.06 / 4)
    assert four.measured and four.measured_step_time_ms == 33.0
    assert four.error == pytest.approx(31.06 / 33.0 - 1)
    assert pd.isna(four.missed_term)
    assert not strong.loc[2].measured
    assert four.contention_ms == 0.0 and four.calibrated_on == "1"
    assert four.extrapolated
    assert four.extrapolation == "beyond the 1 rank calibrated; intra_node link t: datasheet figures, never measured"
    assert not strong.loc[1].extrapolated and pd.isna(strong.loc[1].extrapolation)


def test_a_miss_names_the_term_further_off():
    trials = pd.DataFrame([trial("a", 1, 64, 100.0), trial("b", 2, 32, 90.0, comm_kernel_ms=40.0)])
    links = uniform("t", INTRA_NODE, 10e-6, 1e9)
    frame = predict_from_trials(trials, links, nodes=1, gpus_per_node=2, calibrate_on={1})
    two = frame[(frame["scaling"] == "strong") & (frame["num_workers"] == 2)].iloc[0]
    assert two.missed_term.startswith("comm")


def test_worker_counts_reach_beyond_what_was_measured():
    assert worker_counts(4, 2, {1, 3}) == [1, 2, 3, 4, 8]
    with pytest.raises(AnalysisError, match="1-rank"):
        predict_from_trials(pd.DataFrame([trial("b", 2, 32, 90.0)]), named_link("10gbe"), 2, 1)


def test_cli_predicts_a_sweep_over_a_named_link(tmp_path, capsys):
    sweep = tmp_path / "s"
    for row in (trial("a", 1, 64, 100.0), trial("b", 2, 32, 60.0)):
        (sweep / "trials").mkdir(parents=True, exist_ok=True)
        pd.DataFrame([{**row, "throughput": 1.0, "timed_s": 1.0, "timed_samples": 1, "train_time_s": 1.0}]).to_parquet(
            sweep / "trials" / f"{row['trial_id']}.parquet"
        )
    assert main([str(sweep), "--nodes", "4", "--gpus-per-node", "1", "--link", "10gbe"]) == 0
    out = capsys.readouterr().out
    assert "predictions:" in out
    table = pq.read_table(sweep / "report" / "predictions.parquet").to_pandas()
    assert set(table["num_workers"]) == {1, 2, 4}
    assert (table["link"] == "10gbe").all()
    assert table.loc[table["num_workers"] == 4, "extrapolated"].all()
    assert "* extrapolated: 2 nodes, calibrated on 1;" in out and "beyond the 2 ranks calibrated" in out
    assert main([str(sweep), "--nodes", "2", "--gpus-per-node", "1", "--link", "carrier-pigeon"]) == 2
    assert "unknown link 'carrier-pigeon'" in capsys.readouterr().err


def test_comm_on_one_rank_is_nothing():
    assert comm_s([Transfer("all_reduce", 1e9)], named_link("10gbe"), 1, 1) == 0.0


def test_the_report_section_shows_the_fits_and_predictions_beyond_the_measured_ranks(tmp_path):
    from types import SimpleNamespace

    from analysis.prediction.predict import report_predictions
    from analysis.report.prediction_section import prediction_section
    from analysis.report.render import Table

    sweep = tmp_path / "s"
    (sweep / "links").mkdir(parents=True)
    points = [
        {"row": "point", "link_class": INTRA_NODE, "collective": "all_reduce", "ranks": 2, "bytes": n, "time_s": t}
        for n in (1024, 2**20, 2**24)
        for t in [LinkFit(1e-5, 1e9).time_s("all_reduce", n, 2)]
    ]
    pq.write_table(table_from_rows("links", points + fit_rows(points)), sweep / "links" / "links.parquet")
    trials = pd.DataFrame([trial("a", 1, 64, 100.0), trial("b", 2, 32, 55.0)])
    data = SimpleNamespace(sweep_dir=sweep, trials=trials)
    blocks = prediction_section(SimpleNamespace(data=data, predictions=report_predictions(sweep, trials)), [])
    tables = [b for b in blocks if isinstance(b, Table)]
    assert tables[0].rows[0][:2] == [INTRA_NODE, "all_reduce"]
    predicted = tables[1].rows
    assert {row[1] for row in predicted} >= {"1", "2", "4", "8"}  # up to 4x the 2 ranks measured
    assert any(row[7] == "(prediction)" for row in predicted)
    assert prediction_section(SimpleNamespace(data=SimpleNamespace(sweep_dir=tmp_path, trials=trials)), []) == []


def probed(alpha_s: float, bytes_per_s: float) -> Links:
    """An intra-node link as a probe's table gives it: timed, so not a datasheet figure."""
    return Links("probe", uniform("probe", INTRA_NODE, alpha_s, bytes_per_s).fits, frozenset({INTRA_NODE}))


def test_step_terms_add_the_contention_to_the_compute():
    terms = StepTerms(compute_ms=100.0, comm_ms=10.0, overlap=0.5, contention_ms=6.0)
    assert terms.step_ms == 111.0 and terms.exposed_comm_ms == 5.0  # the contention is compute, not communication
    assert StepTerms(5.0, 10.0, 1.0, 2.0).step_ms == 10.0  # never shorter than the collectives


def test_contention_is_each_counts_least_squares_share_of_compute_and_never_negative():
    fitted = fit_contention([(2, 100.0, 25.0), (2, 50.0, 12.5)])
    assert fitted.shares == ((2, 0.25),) and fitted.points == 2
    assert fitted.ms(40.0, ranks_per_node=2) == pytest.approx(10.0)
    assert fitted.ms(40.0, ranks_per_node=1) == 0.0  # a rank alone on its host shares it with nobody
    assert fit_contention([(2, 100.0, 20.0), (2, 50.0, 15.0)]).share(2) == pytest.approx((2000 + 750) / 12500)
    assert fit_contention([(2, 100.0, -5.0)]).share(2) == 0.0  # below the idle link: overlap or noise, not a gain
    assert fit_contention([]).share(4) == 0.0 and fit_contention([(1, 100.0, 5.0)]).shares == ()


def test_contention_is_linear_in_ranks_per_host_between_counts_and_flat_beyond():
    fitted = fit_contention([(2, 100.0, 10.0), (4, 100.0, 50.0)])
    assert fitted.shares == ((2, pytest.approx(0.1)), (4, pytest.approx(0.5)))
    assert fitted.share(3) == pytest.approx(0.3)  # halfway between 2 and 4 ranks
    assert fitted.share(8) == pytest.approx(0.5)  # beyond the largest count: its share
    assert fit_contention([(4, 100.0, 30.0)]).share(2) == pytest.approx(0.1)  # from 0 at one rank to 0.3 at 4


def test_the_coupled_probes_share_is_its_coupled_all_reduce_less_the_idle_one_on_its_compute():
    # 100 ms of compute alone, 5 ms of all-reduce on idle ranks, 150 ms a step when both run coupled
    point = CoupledProbe(ranks_per_node=4, compute_ms=100.0, idle_ms=5.0, coupled_ms=150.0)
    assert point.coupled_comm_ms == 50.0  # the all-reduce as the coupled ranks see it
    assert point.probed_share == pytest.approx(0.45)  # (50 - 5) / 100
    # a coupled step below compute and idle all-reduce is overlap or noise, not a gain: no share
    assert CoupledProbe(4, 100.0, 5.0, 103.0).probed_share == 0.0


def test_probed_shares_are_each_counts_median_and_leave_one_rank_out():
    points = [
        CoupledProbe(4, 100.0, 0.0, 130.0),
        CoupledProbe(4, 100.0, 0.0, 150.0),
        CoupledProbe(4, 100.0, 0.0, 170.0),
    ]
    points += [CoupledProbe(8, 50.0, 2.0, 77.0), CoupledProbe(1, 100.0, 0.0, 120.0)]
    assert probed_shares(points) == ((4, pytest.approx(0.5)), (8, pytest.approx(0.5)))
    assert probed_shares([]) == ()


def test_the_coupled_rows_of_a_links_table_read_back_in_ms():
    row = {"row": "coupled", "ranks": 4, "nodes": 1, "time_s": 0.15, "compute_s": 0.1, "idle_s": 0.005}
    table = table_from_rows("links", [row, {"row": "fit", "ranks": 4}, {**row, "ranks": 2, "nodes": 2}])
    assert coupled_from_table(table) == [CoupledProbe(4, 100.0, 5.0, 150.0)]  # one host's rows only


def test_the_buckets_probed_are_the_engines_all_reduce_split_as_the_model_times_it():
    # 10 Mi fp32 parameters: 40 MiB of gradients in DDP's 25 MiB buckets, two of 20 MiB
    assert bucket_bytes(Engine("ddp"), 10 * 2**20) == (20 * 2**20, 20 * 2**20)
    # DeepSpeed stage 0, bf16 gradients: 1e9 parameters in buckets of 5e8 elements, two of 1e9 bytes
    assert bucket_bytes(Engine("deepspeed", grad_bytes=2), 1_000_000_000) == (1_000_000_000, 1_000_000_000)
    with pytest.raises(AnalysisError, match="all-reduce only"):
        bucket_bytes(Engine("deepspeed", zero_stage=2), 1000)


def test_the_probe_fills_the_contention_at_counts_no_trial_calibrates():
    fitted = fit_contention([(2, 100.0, 10.0)], probed=((2, 0.9), (4, 0.5), (8, 0.6)))
    # the 2-rank trials' 0.1 wins over the probe's 0.9; the probe gives 4 and 8
    assert fitted.shares == ((2, pytest.approx(0.1)), (4, 0.5), (8, 0.6)) and fitted.probed == (4, 8)
    assert fitted.share(6) == pytest.approx(0.55)  # linear between the probed counts
    sources = [fitted.source(n) for n in (1, 2, 4, 6, 8, 16)]
    assert sources == ["none", "trials", "probe", "between", "probe", "beyond"]
    assert fit_contention([], probed=((4, -0.1),)).share(4) == 0.0  # never negative, as a trial's


def scaling_sweep(measured_at_four: float) -> pd.DataFrame:
    """Strong scaling of 64 samples: 1 rank at 100 ms; 2 ranks at the idle link plus a fifth more compute; 4 ranks
    measured at ``measured_at_four``. A 4 MB fp32 all-reduce on a 10 us, 1 GB/s link."""
    two = 50.0 * 1.2 + (2 * 10e-6 + 1.0 * 4e6 / 1e9) * 1000  # compute and its contention, the idle link's 4.02 ms
    return pd.DataFrame(
        [trial("a", 1, 64, 100.0), trial("b", 2, 32, two), trial("c", 2, 32, two), trial("d", 4, 16, measured_at_four)]
    )


def test_the_contention_calibrated_on_two_ranks_predicts_four_held_out():
    held = holdout(scaling_sweep(40.0), probed(10e-6, 1e9))
    assert list(held["num_workers"]) == [4] and list(held["scaling"]) == ["strong"]
    four = held.iloc[0]
    assert four.calibrated_on == "1,2" and four.contention_share == pytest.approx(0.2)
    # 25 ms compute, a fifth of it lost to the other ranks, and the 6.06 ms idle all-reduce on 4 ranks
    assert four.contention_ms == pytest.approx(5.0)
    assert four.step_time_ms == pytest.approx(36.06)
    assert four.error == pytest.approx(36.06 / 40.0 - 1)
    assert four.extrapolated and four.extrapolation == "beyond the 2 ranks calibrated"
    assert holdout_summary(held) == (
        "held-out error at 4 ranks from 1 and 2: -9.9%; predictions beyond 4 ranks carry at least that error."
    )
    assert holdout(scaling_sweep(40.0).query("num_workers < 4"), probed(10e-6, 1e9)).empty  # two counts
    assert holdout_summary(pd.DataFrame()) == ""


def test_the_held_out_count_takes_the_coupled_probes_share_in_place_of_the_extrapolated_one():
    held = holdout(scaling_sweep(40.0), probed(10e-6, 1e9), probed=((4, 0.5),))
    four = held.iloc[0]
    assert four.contention_source == "probe" and four.contention_share == 0.5
    # 25 ms compute, half of it the coupling the probe measured at 4 ranks, and the 6.06 ms idle all-reduce
    assert four.contention_ms == pytest.approx(12.5) and four.step_time_ms == pytest.approx(43.56)
    assert holdout(scaling_sweep(40.0), probed(10e-6, 1e9)).iloc[0].contention_source == "beyond"


def test_calibrated_on_every_count_the_prediction_beyond_them_is_marked_extrapolated():
    frame = predict_from_trials(scaling_sweep(36.06), probed(10e-6, 1e9), nodes=1, gpus_per_node=8)
    strong = frame[frame["scaling"] == "strong"].set_index("num_workers")
    assert strong.loc[4].calibrated_on == "1,2,4" and not strong.loc[4].extrapolated
    assert strong.loc[4].contention_share == pytest.approx(0.2)  # the 4-rank point lies on the same line
    assert strong.loc[8].extrapolated and strong.loc[8].extrapolation == "beyond the 4 ranks calibrated"
    links = probed(10e-6, 1e9).with_class(INTER_NODE, named_link("10gbe"))
    across = predict_from_trials(scaling_sweep(36.06), links, nodes=4, gpus_per_node=2)
    eight = across[(across["scaling"] == "strong") & (across["num_workers"] == 8)].iloc[0]
    assert eight.extrapolation == (
        "beyond the 4 ranks calibrated; 4 nodes, calibrated on 1; inter_node link probe+10gbe: datasheet figures, "
        "never measured"
    )


def test_the_validation_line_reads_the_committed_summary(tmp_path):
    summary = tmp_path / "cpu16-prediction" / "summary.csv"
    summary.parent.mkdir()
    pd.DataFrame(
        [
            {"run": "r", "host": "16 CPU cores, gloo", "scaling": "strong", "num_workers": n, "held_out": n > 2}
            | {"error": e, "calibrated_on": c}
            for n, e, c in ((2, -0.5, "1,2"), (4, 0.05, "1,2"), (8, -0.12, "1,2"), (8, 0.03, "1,2,4"))
        ]
    ).to_csv(summary, index=False)
    assert validation_line(summary) == (
        "validated against measurement: cpu16-prediction (16 CPU cores, gloo), worst held-out error +3.0% of 1 at "
        "8 ranks from 1,2,4 (r, strong, 8 ranks); -12.0% of 2 at 4-8 ranks from 1,2 (r, strong, 8 ranks)"
    )
    assert validation_line(tmp_path / "none.csv") == ""


def test_the_report_section_prints_the_held_out_check_beside_the_predictions(tmp_path):
    from types import SimpleNamespace

    from analysis.prediction.predict import report_predictions
    from analysis.report.prediction_section import prediction_section
    from analysis.report.render import Paragraph, Table

    sweep = tmp_path / "s"
    (sweep / "links").mkdir(parents=True)
    points = [
        {"row": "point", "link_class": INTRA_NODE, "collective": "all_reduce", "ranks": p, "bytes": n, "time_s": t}
        for p in (2, 4)
        for n in (1024, 2**20, 2**24)
        for t in [LinkFit(10e-6, 1e9).time_s("all_reduce", n, p)]
    ]
    pq.write_table(table_from_rows("links", points + fit_rows(points)), sweep / "links" / "links.parquet")
    trials = scaling_sweep(40.0)
    data = SimpleNamespace(sweep_dir=sweep, trials=trials)
    blocks = prediction_section(SimpleNamespace(data=data, predictions=report_predictions(sweep, trials)), [])
    held = next(b for b in blocks if isinstance(b, Paragraph) and b.text.startswith("**Held out**"))
    assert "held-out error at 4 ranks from 1 and 2: -9.9%; predictions beyond 4 ranks carry at least" in held.text
    table = blocks[blocks.index(held) + 1]
    assert isinstance(table, Table) and table.rows[0][:3] == ["strong", "4", "1,2"] and table.rows[0][-1] == "-9.9%"
    predicted = blocks[blocks.index(table) + 1].rows
    assert {row[-1] for row in predicted if row[1] == "16"} == {"beyond the 4 ranks calibrated"}  # strong, weak
    few = SimpleNamespace(sweep_dir=sweep, trials=trials[trials["num_workers"] < 4])
    blocks = prediction_section(SimpleNamespace(data=few, predictions=report_predictions(sweep, few.trials)), [])
    assert any(isinstance(b, Paragraph) and "fewer than three worker counts" in b.text for b in blocks)


def test_the_cli_finds_the_committed_validation_from_a_checkout():
    assert VALIDATION_SUMMARY.is_file()  # the path follows the module when it moves rooms
    assert validation_line().startswith("validated against measurement: cpu16-prediction (16 CPU cores, gloo)")
