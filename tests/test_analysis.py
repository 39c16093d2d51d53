"""The sweep analysis on synthetic tables with known answers (no Ray, no training)."""

from __future__ import annotations

import json
import subprocess
import sys
from pathlib import Path

import pandas as pd
import pyarrow as pa
import pyarrow.parquet as pq
import pytest

from analysis import AnalysisError, analyze, compare
from analysis.__main__ import main
from analysis.comparison import matching_ratios
from analysis.metrics.batch import knee_index
from analysis.metrics.compute import compute
from analysis.report.findings import headlines
from analysis.report.report import configuration_labels, most_at_once
from analysis.rows.groups import BATCH, STRONG, find_groups
from analysis.rows.load import load_sweep
from raysweep.core.store import ResultStore

PNG_MAGIC = b"\x89PNG\r\n\x1a\n"
CONFIG = {
    "status": "completed",
    "model": "vit_micro_patch4_32",
    "dataset": "digits",
    "image_size": 32,
    "device": "cpu",
    "precision": "fp32",
    "engine": "deepspeed",
    "zero_stage": 0,
    "optimizer": "adamw",
    "lr": 0.001,
    "compile": "false",
    "grad_accum_steps": 1,
    "placement_strategy": "PACK",
    "slow_ranks": "",
    "slow_factor": 0.3,
    "epochs": 2,
}


# Trial parameters as params_json holds them (lr 0.0: the optimizer's batch rule); the rest are measurements.
PARAMETERS = (
    "model",
    "dataset",
    "image_size",
    "device",
    "precision",
    "engine",
    "zero_stage",
    "optimizer",
    "compile",
    "num_workers",
    "micro_batch_per_worker",
    "grad_accum_steps",
    "global_batch",
    "placement_strategy",
    "data_scaling",
    "slow_ranks",
    "slow_factor",
    "epochs",
    "seed",
    "weight_decay",
    "amp",
    "sequence_parallel",
)


def write_rows(store: ResultStore, table: str, trial_id: str, rows: list[dict]) -> None:
    """Rows as a worker of this round writes them, columns the vocabulary may not name yet included."""
    directory = store.root / table
    directory.mkdir(parents=True, exist_ok=True)
    rows = [{"sweep": store.sweep, "trial_id": trial_id, **row} for row in rows]
    pq.write_table(pa.Table.from_pylist(rows), directory / f"{trial_id}.parquet")


def add_trial(store: ResultStore, trial_id: str, **values) -> None:
    row = {**CONFIG, **values}
    if "train_time_s" in row and "throughput" not in row:
        row["throughput"] = row["samples_per_epoch"] * row["epochs"] / row["train_time_s"]
        row["throughput_per_worker"] = row["throughput"] / row["num_workers"]
    params = {k: row[k] for k in PARAMETERS if k in row}
    row["params_json"] = json.dumps({**params, "lr": row.pop("lr_param", 0.0)}, sort_keys=True)
    write_rows(store, "trials", trial_id, [row])


def strong_sweep(results: Path, times: dict[int, float], name: str = "strong") -> Path:
    """Fixed global batch 256 and 4096 samples per epoch; micro batch derived from the worker count."""
    store = ResultStore(results, name)
    for n, seconds in times.items():
        add_trial(
            store,
            f"s{n}",
            num_workers=n,
            micro_batch_per_worker=256 // n,
            global_batch=256,
            data_scaling="fixed",
            samples_per_epoch=4096,
            train_time_s=seconds,
        )
    return store.root


def amdahl_times(serial: float, workers: list[int], t1: float = 100.0) -> dict[int, float]:
    return {n: t1 * (serial + (1 - serial) / n) for n in workers}


def test_amdahl_data_gives_its_serial_fraction_back(tmp_path):
    serial = 0.125
    sweep = strong_sweep(tmp_path, amdahl_times(serial, [1, 2, 4, 8, 16]))
    analysis = compute(load_sweep(sweep))
    (result,) = analysis.strong
    assert result.base_workers == 1
    assert result.amdahl.serial_fraction == pytest.approx(serial, abs=1e-6)
    assert result.amdahl.rms_residual_s == pytest.approx(0, abs=1e-9)
    karp_flatt = result.rows.set_index("num_workers")["karp_flatt"]
    assert karp_flatt.loc[1] != karp_flatt.loc[1]  # undefined (NaN) at the base
    assert karp_flatt.drop(index=1).to_numpy() == pytest.approx([serial] * 4, abs=1e-6)
    speedup = result.rows.set_index("num_workers")["speedup"]
    assert speedup.loc[8] == pytest.approx(1 / (serial + (1 - serial) / 8))


def test_linear_strong_scaling_has_efficiency_one(tmp_path):
    sweep = strong_sweep(tmp_path, {n: 80.0 / n for n in (1, 2, 4, 8)})
    (result,) = compute(load_sweep(sweep)).strong
    assert result.rows["efficiency"].to_numpy() == pytest.approx([1.0] * 4)
    assert result.amdahl.serial_fraction == pytest.approx(0, abs=1e-9)


def test_without_one_worker_the_smallest_count_is_the_base(tmp_path):
    sweep = strong_sweep(tmp_path, amdahl_times(0.2, [2, 4, 8]))
    (result,) = compute(load_sweep(sweep)).strong
    assert result.base_workers == 2
    assert result.amdahl.serial_fraction == pytest.approx(0.2, abs=1e-6)  # the fit needs no 1-worker point
    assert result.rows.set_index("num_workers")["efficiency"].loc[2] == pytest.approx(1.0)
    report = analyze(sweep).read_text(encoding="utf-8")
    assert "no 1-worker trial: the base is 2 workers" in report


def test_weak_scaling_with_constant_times_has_efficiency_one(tmp_path):
    store = ResultStore(tmp_path, "weak")
    for n in (1, 2, 4, 8):
        add_trial(
            store,
            f"w{n}",
            num_workers=n,
            micro_batch_per_worker=32,
            global_batch=32 * n,
            data_scaling="per_worker",
            samples_per_epoch=1024 * n,
            train_time_s=50.0,
        )
    (result,) = compute(load_sweep(store.root)).weak
    assert result.rows["efficiency"].to_numpy() == pytest.approx([1.0] * 4)
    assert result.gustafson_alpha == pytest.approx(0, abs=1e-12)
    assert result.rows["gustafson_speedup"].to_numpy() == pytest.approx([1, 2, 4, 8])
    assert result.rows["throughput_per_worker"].to_numpy() == pytest.approx([1024 * 2 / 50] * 4)


def batch_sweep(results: Path) -> Path:
    """One worker, micro batch 16..128; throughput per worker 500, 850, 950, 1000; memory doubles."""
    store = ResultStore(results, "batch")
    for mb, per_worker, mem, comm, wait, acc in (
        (16, 500, 1, 0.4, 0.2, 0.90),
        (32, 850, 2, 0.3, 0.1, 0.91),
        (64, 950, 4, 0.2, 0.05, 0.92),
        (128, 1000, 8, 0.1, 0.02, 0.88),
    ):
        add_trial(
            store,
            f"b{mb}",
            num_workers=1,
            micro_batch_per_worker=mb,
            global_batch=mb,
            data_scaling="fixed",
            samples_per_epoch=4096,
            train_time_s=4096 * 2 / per_worker,
            throughput=per_worker,
            throughput_per_worker=per_worker,
            peak_mem_gib=mem,
            comm_fraction=comm,
            data_wait_fraction=wait,
            comm_time_ms=comm * 100,
            step_time_ms=100.0,
            val_accuracy=acc,
            final_loss=1 - acc,
        )
    return store.root


def test_knee_is_the_smallest_batch_within_ninety_percent_of_peak(tmp_path):
    analysis = compute(load_sweep(batch_sweep(tmp_path)))
    (result,) = analysis.batch
    assert result.knee.micro_batch_per_worker == 64
    assert result.peak.micro_batch_per_worker == 128
    assert "micro batch 64 (global batch 64): 95% of peak throughput per worker" in result.recommendation
    # the fixture's ranks ran on CPUs, where peak_mem_gib is the process's resident memory
    assert "50% of the peak-throughput batch's process (resident) memory (4 of 8 GiB)" in result.recommendation
    assert knee_index(pd.Series([10.0, 9.0, 8.0])) == 0
    assert knee_index(pd.Series([1.0, 8.9, 9.0, 10.0])) == 2


def epochs_sweep(results: Path) -> ResultStore:
    store = ResultStore(results, "tta")
    for tid, n in (("fast", 2), ("slow", 1)):
        add_trial(
            store,
            tid,
            num_workers=n,
            micro_batch_per_worker=64 // n,
            global_batch=64,
            data_scaling="fixed",
            samples_per_epoch=1024,
            train_time_s=60.0 / n,
        )
    write_rows(
        store,
        "epochs",
        "fast",
        [
            {"epoch": e, "val_accuracy": a, "elapsed_s": t}
            for e, (a, t) in enumerate([(0.5, 10.0), (0.8, 20.0), (0.95, 30.0)])
        ],
    )
    write_rows(
        store,
        "epochs",
        "slow",
        [{"epoch": e, "val_accuracy": a, "elapsed_s": t} for e, (a, t) in enumerate([(0.6, 5.0), (0.7, 10.0)])],
    )
    return store


def test_time_to_accuracy_default_and_explicit_target(tmp_path):
    store = epochs_sweep(tmp_path)
    default = compute(load_sweep(store.root)).per_trial.set_index("trial_id")
    assert default["target_accuracy"].iloc[0] == pytest.approx(0.9 * 0.95)
    assert default.loc["fast", "time_to_accuracy_s"] == 30.0
    assert default.loc["fast", "epoch_reached"] == 2
    assert pd.isna(default.loc["slow", "time_to_accuracy_s"])
    explicit = compute(load_sweep(store.root), target=0.7).per_trial.set_index("trial_id")
    assert explicit["time_to_accuracy_s"].to_dict() == {"fast": 20.0, "slow": 10.0}
    assert "1 of 2 trial(s) never reached it" in analyze(store.root).read_text(encoding="utf-8")


def test_stragglers_from_rank_rows(tmp_path):
    store = ResultStore(tmp_path, "ranks")
    for n in (1, 4):
        add_trial(
            store,
            f"r{n}",
            num_workers=n,
            micro_batch_per_worker=64 // n,
            global_batch=64,
            data_scaling="fixed",
            samples_per_epoch=1024,
            train_time_s=60.0 / n,
            step_time_ms=130.0,
        )
    write_rows(
        store,
        "ranks",
        "r4",
        [
            {"rank": r, "step_time_ms": 130.0, "compute_ms": c, "wait_ms": 130.0 - c}
            for r, c in enumerate([100.0, 100.0, 130.0, 100.0])
        ],
    )
    (row,) = compute(load_sweep(store.root)).stragglers.to_dict("records")
    assert row["slowest_rank"] == 2
    assert row["straggler_ratio"] == pytest.approx(1.3)
    assert row["others_wait_ms"] == pytest.approx(30.0)
    assert row["straggler_cost_fraction"] == pytest.approx(30.0 / 130.0)


def test_groups_split_on_config_and_ignore_derived_columns(tmp_path):
    store = ResultStore(tmp_path, "groups")
    for model in ("vit_a", "vit_b"):
        for n in (1, 2):
            # lr follows the adamw square-root rule of the global batch: a derived value, not a config difference
            gb = 64 * n
            add_trial(
                store,
                f"{model}-{n}",
                model=model,
                num_workers=n,
                micro_batch_per_worker=64,
                global_batch=gb,
                lr=1e-3 * (gb / 256) ** 0.5,
                data_scaling="fixed",
                samples_per_epoch=1024,
                train_time_s=10.0,
            )
    trials = load_sweep(store.root).trials
    strong = find_groups(trials, STRONG)  # global batch differs: four one-point groups
    assert [g.points for g in strong] == [1, 1, 1, 1]
    batch = find_groups(trials, BATCH)  # micro batch is constant within every group
    assert len(batch) == 4 and not any(g.comparable for g in batch)
    weak = ResultStore(tmp_path, "weakgroups")
    for model in ("vit_a", "vit_b"):
        for n in (1, 2):
            gb = 64 * n
            add_trial(
                weak,
                f"{model}-{n}",
                model=model,
                num_workers=n,
                micro_batch_per_worker=64,
                global_batch=gb,
                lr=1e-3 * (gb / 256) ** 0.5,
                data_scaling="per_worker",
                samples_per_epoch=1024 * n,
                train_time_s=10.0,
            )
    groups = compute(load_sweep(weak.root)).groups["weak"]
    assert [(g.key["model"], g.points, g.key["lr"]) for g in groups] == [("vit_a", 2, 0.0), ("vit_b", 2, 0.0)]


def test_report_files_and_plots(tmp_path):
    strong_sweep(tmp_path, amdahl_times(0.1, [1, 2, 4]), name="full")
    store = ResultStore(tmp_path, "full")
    for mb, per_worker in ((16, 400.0), (32, 950.0), (64, 1000.0)):
        add_trial(
            store,
            f"b{mb}",
            num_workers=2,
            micro_batch_per_worker=mb,
            global_batch=2 * mb,
            data_scaling="per_worker",
            samples_per_epoch=1024,
            train_time_s=1000.0 / mb,
            peak_mem_gib=mb / 8,
            throughput=2 * per_worker,
            throughput_per_worker=per_worker,
            comm_fraction=1 / mb,
            data_wait_fraction=0.5 / mb,
            val_accuracy=0.9,
            final_loss=0.3,
        )
        write_rows(store, "epochs", f"b{mb}", [{"epoch": 0, "val_accuracy": 0.9, "elapsed_s": 1000.0 / mb}])
    add_trial(store, "crashed", status="failed", num_workers=8, micro_batch_per_worker=32, global_batch=256)
    add_trial(store, "too-big", status="oom", num_workers=1, micro_batch_per_worker=512, global_batch=512)
    out = tmp_path / "out"
    report = analyze(store.root, out_dir=out)
    assert report == out / "report.md"
    for name in ("report.md", "report.html", "scaling.parquet", "summary.json"):
        assert (out / name).stat().st_size > 0
    text = report.read_text(encoding="utf-8")
    assert "1 failed, 1 oom" in text
    assert text.index("## Summary") < text.index("| group")
    summary = json.loads((out / "summary.json").read_text(encoding="utf-8"))
    assert summary["amdahl_fit"]["serial_fraction"] == pytest.approx(0.1, abs=1e-6)
    assert summary["knee"]["micro_batch"] == 32
    assert summary["left_out"] == {"failed": 1, "oom": 1}
    pngs = sorted(out.glob("*.png"))
    assert {p.name for p in pngs} == set(summary["plots"]["made"])
    assert {"speedup.png", "batch_throughput.png", "batch_overheads.png", "epochs.png"} <= {p.name for p in pngs}
    for png in pngs:
        assert png.read_bytes().startswith(PNG_MAGIC) and png.stat().st_size > 1000
        assert f"]({png.name})" in text
    assert text.count("](") == len(pngs)  # the headline plot is shown once, in the summary
    html = (out / "report.html").read_text(encoding="utf-8")
    assert html.count('src="data:image/png;base64,') == len(pngs) and "](" not in html
    table = pq.read_table(out / "scaling.parquet").to_pandas().set_index("trial_id")
    assert len(table) == 6 and table.loc["s4", "scaling_group"] == "S1"
    assert table.loc["b16", "batch_group"] == table.loc["b64", "batch_group"] == summary["knee"]["group"]
    assert table.loc["s2", "karp_flatt"] == pytest.approx(0.1, abs=1e-6)
    assert set(summary["plots"]["skipped"]) == {
        "efficiency",
        "weak_throughput",
        "joules_per_sample",
        "predicted_scaling",
        "tuned_accuracy",
    }


def test_plots_without_data_are_skipped_and_said_so(tmp_path):
    sweep = strong_sweep(tmp_path, amdahl_times(0.1, [1, 2, 4]))
    report = analyze(sweep)
    assert sorted(p.name for p in report.parent.glob("*.png")) == ["speedup.png"]
    skipped = json.loads((report.parent / "summary.json").read_text(encoding="utf-8"))["plots"]["skipped"]
    assert set(skipped) == {
        "efficiency",
        "weak_throughput",
        "batch_throughput",
        "batch_overheads",
        "batch_accuracy",
        "joules_per_sample",
        "time_to_accuracy",
        "epochs",
        "predicted_scaling",
        "tuned_accuracy",
    }
    text = report.read_text(encoding="utf-8")
    assert "## Plots not made" in text and "`time_to_accuracy`: no trial reached a target accuracy" in text
    assert "Not computed: the epochs table has no validation accuracy" in text


def test_cli_writes_default_report_dir(tmp_path, capsys):
    sweep = strong_sweep(tmp_path, amdahl_times(0.1, [1, 2]))
    assert main([str(sweep), "--target", "0.5"]) == 0
    assert capsys.readouterr().out.strip() == str(sweep / "report" / "report.md")
    assert (sweep / "report" / "summary.json").exists()


def write_trials_without(results: Path, missing: str) -> Path:
    sweep = results / "broken"
    (sweep / "trials").mkdir(parents=True)
    rows = {
        "trial_id": ["a", "b"],
        "status": ["completed"] * 2,
        "num_workers": [1, 2],
        "micro_batch_per_worker": [8, 8],
        "train_time_s": [2.0, 1.0],
        "throughput": [1.0, 2.0],
    }
    del rows[missing]
    pq.write_table(pa.table(rows), sweep / "trials" / "t.parquet")
    return sweep


@pytest.mark.parametrize(
    "case, message",
    [
        ("missing", "does not exist"),
        ("empty", "no trial results in"),
        ("results_dir", "did you mean one of its sweeps: one"),
        ("no_column", "no values in needed column(s) train_time_s"),
        ("all_failed", "no completed trials"),
        ("bad_target", "target accuracy must be a fraction in (0, 1]"),
        ("out_is_a_file", "cannot write the report to"),
    ],
)
def test_bad_input_exits_2_with_one_line(tmp_path, capsys, case, message):
    argv = [str(tmp_path / "nowhere")]
    if case == "empty":
        (tmp_path / "empty").mkdir()
        argv = [str(tmp_path / "empty")]
    elif case == "results_dir":
        strong_sweep(tmp_path, {1: 2.0, 2: 1.0}, name="one")
        argv = [str(tmp_path)]
    elif case == "no_column":
        argv = [str(write_trials_without(tmp_path, "train_time_s"))]
    elif case == "all_failed":
        add_trial(ResultStore(tmp_path, "dead"), "x", status="oom", num_workers=1)
        argv = [str(tmp_path / "dead")]
    elif case == "bad_target":
        argv = [str(strong_sweep(tmp_path, {1: 2.0, 2: 1.0})), "--target", "90"]
    elif case == "out_is_a_file":
        (tmp_path / "taken").write_text("not a directory")
        argv = [str(strong_sweep(tmp_path, {1: 2.0, 2: 1.0})), "--out", str(tmp_path / "taken")]
    assert main(argv) == 2
    err = capsys.readouterr().err
    assert err.count("\n") == 1 and err.startswith("raysweep: error: ") and message in err
    with pytest.raises(AnalysisError, match=message.split("(")[0]):
        analyze(
            argv[0],
            target=90 if case == "bad_target" else None,
            out_dir=tmp_path / "taken" if case == "out_is_a_file" else None,
        )


def test_module_runs_as_a_program(tmp_path):
    done = subprocess.run(
        [sys.executable, "-m", "analysis", str(tmp_path / "nowhere")],
        capture_output=True,
        text=True,
        cwd=Path(__file__).resolve().parents[1],
        timeout=60,
    )
    assert done.returncode == 2 and "Traceback" not in done.stderr and done.stderr.count("\n") == 1


def timed_strong_sweep(
    results: Path, serial: float, workers: list[int], warmup_s: float = 40.0, t1: float = 100.0
) -> Path:
    """Timed seconds follow Amdahl's law; train_time_s holds ``warmup_s`` of warm-up on top, as a worker writes."""
    store = ResultStore(results, "timed")
    for n in workers:
        timed = t1 * (serial + (1 - serial) / n)
        add_trial(
            store,
            f"t{n}",
            num_workers=n,
            micro_batch_per_worker=256 // n,
            global_batch=256,
            data_scaling="fixed",
            samples_per_epoch=4096,
            train_time_s=timed + warmup_s,
            warmup_s=warmup_s,
            timed_s=timed,
            timed_samples=8192,
            timed_steps=32,
            throughput=8192 / timed,
            throughput_per_worker=8192 / timed / n,
        )
    return store.root


def test_serial_fraction_comes_from_timed_work_not_warm_up(tmp_path):
    analysis = compute(load_sweep(timed_strong_sweep(tmp_path, 0.137, [1, 2, 4, 8])))
    (result,) = analysis.strong
    assert result.amdahl.serial_fraction == pytest.approx(0.137, abs=1e-9)
    assert result.amdahl.degrees_of_freedom == 2 and result.amdahl.rms_residual_s == pytest.approx(0, abs=1e-9)
    assert result.rows.set_index("num_workers")["speedup"].loc[2] == pytest.approx(1 / (0.137 + 0.863 / 2))
    assert set(result.rows["timed_source"]) == {"timed_s"}
    assert not any("derived as samples / throughput" in h for h in headlines(analysis))


def test_two_worker_counts_claim_no_amdahl_fit(tmp_path):
    analysis = compute(load_sweep(timed_strong_sweep(tmp_path, 0.2, [1, 2])))
    (result,) = analysis.strong
    assert result.amdahl is None
    (finding,) = [h for h in headlines(analysis) if h.startswith("Strong scaling")]
    assert "no Amdahl fit: 2 worker count(s), a fit needs 3" in finding and "bounded" not in finding


def test_old_tables_derive_timed_seconds_and_say_so(tmp_path):
    analysis = compute(load_sweep(strong_sweep(tmp_path, {1: 100.0, 2: 60.0})))
    assert analysis.per_trial["timed_source"].eq("samples / throughput").all()
    assert analysis.per_trial.set_index("trial_id").loc["s1", "timed_s"] == pytest.approx(100.0)
    assert any("derived as samples / throughput" in h for h in headlines(analysis))


def test_few_timed_steps_are_warned_about(tmp_path):
    store = ResultStore(tmp_path, "short")
    for n, steps in ((1, 4), (2, 40)):
        add_trial(
            store,
            f"q{n}",
            num_workers=n,
            micro_batch_per_worker=64 // n,
            global_batch=64,
            data_scaling="fixed",
            samples_per_epoch=1024,
            timed_s=10.0 / n,
            timed_samples=2048,
            timed_steps=steps,
            train_time_s=20.0,
            throughput=204.8 * n,
            throughput_per_worker=204.8,
        )
    (warning,) = [h for h in headlines(compute(load_sweep(store.root))) if h.startswith("Warning")]
    assert "1 trial(s) timed fewer than 5 optimizer steps (q1)" in warning


def test_gustafson_recovers_a_nonzero_alpha(tmp_path):
    alpha = 0.25
    store = ResultStore(tmp_path, "gustafson")
    for n in (1, 2, 4, 8):
        rate = 100.0 * (n - alpha * (n - 1))  # scaled speedup S(n) = n - alpha (n - 1) of a 100/s base
        add_trial(
            store,
            f"g{n}",
            num_workers=n,
            micro_batch_per_worker=32,
            global_batch=32 * n,
            data_scaling="per_worker",
            samples_per_epoch=1024 * n,
            timed_samples=2048 * n,
            timed_s=2048 * n / rate,
            timed_steps=64,
            train_time_s=2048 * n / rate + 5,
            throughput=rate,
            throughput_per_worker=rate / n,
        )
    (result,) = compute(load_sweep(store.root)).weak
    assert result.gustafson.alpha == pytest.approx(alpha, abs=1e-9)
    assert result.gustafson.degrees_of_freedom == 3 and result.gustafson.rms_residual == pytest.approx(0, abs=1e-9)
    assert result.rows.set_index("num_workers")["efficiency"].loc[4] == pytest.approx((4 - alpha * 3) / 4)


def test_two_rank_straggler_ratio_is_against_the_other_rank(tmp_path):
    store = ResultStore(tmp_path, "two")
    add_trial(
        store,
        "p2",
        num_workers=2,
        micro_batch_per_worker=32,
        global_batch=64,
        data_scaling="fixed",
        samples_per_epoch=1024,
        train_time_s=10.0,
        step_time_ms=130.0,
        slow_ranks="1",
    )
    write_rows(
        store,
        "ranks",
        "p2",
        [
            {"rank": 0, "step_time_ms": 130.0, "busy_ms": 100.0, "wait_ms": 30.0, "slowdown_achieved": 1.0},
            {"rank": 1, "step_time_ms": 130.0, "busy_ms": 130.0, "wait_ms": 0.0, "slowdown_achieved": 1.29},
        ],
    )
    analysis = compute(load_sweep(store.root))
    (row,) = analysis.stragglers.to_dict("records")
    assert row["straggler_basis"] == "busy_ms" and row["straggler_ratio"] == pytest.approx(1.3)
    assert row["slowdown_achieved"] == pytest.approx(1.29)
    assert any("1.30× the median of the other ranks' busy_ms" in h for h in headlines(analysis))


def test_no_straggler_finding_at_noise_without_slow_ranks(tmp_path):
    store = ResultStore(tmp_path, "even")
    add_trial(
        store,
        "e2",
        num_workers=2,
        micro_batch_per_worker=32,
        global_batch=64,
        data_scaling="fixed",
        samples_per_epoch=1024,
        train_time_s=10.0,
        step_time_ms=100.0,
    )
    write_rows(
        store,
        "ranks",
        "e2",
        [{"rank": r, "step_time_ms": 100.0, "busy_ms": b, "wait_ms": 101.0 - b} for r, b in enumerate([100.0, 101.0])],
    )
    analysis = compute(load_sweep(store.root))
    assert analysis.stragglers["straggler_ratio"].iloc[0] == pytest.approx(1.01)
    assert not any(h.startswith("Stragglers") for h in headlines(analysis))


def test_exposed_communication_is_step_time_over_the_matching_one_rank_trial(tmp_path):
    store = ResultStore(tmp_path, "comm")
    for tid, n, mb, step in (
        ("one", 1, 32, 100.0),
        ("two", 2, 32, 120.0),
        ("four", 4, 32, 135.0),
        ("other-mb", 2, 16, 90.0),
    ):
        add_trial(
            store,
            tid,
            num_workers=n,
            micro_batch_per_worker=mb,
            global_batch=mb * n,
            data_scaling="per_worker",
            samples_per_epoch=1024 * n,
            train_time_s=10.0,
            step_time_ms=step,
        )
    add_trial(
        store,
        "bf16",
        num_workers=2,
        micro_batch_per_worker=32,
        global_batch=64,
        data_scaling="per_worker",
        samples_per_epoch=2048,
        train_time_s=10.0,
        step_time_ms=80.0,
        precision="bf16",
    )
    exposed = compute(load_sweep(store.root)).per_trial.set_index("trial_id")["comm_exposed_ms"]
    assert exposed.loc["two"] == pytest.approx(20.0) and exposed.loc["four"] == pytest.approx(35.0)
    assert exposed[["one", "other-mb", "bf16"]].isna().all()  # one rank itself; no 1-rank match


def test_no_communication_finding_on_one_worker(tmp_path):
    analysis = compute(load_sweep(batch_sweep(tmp_path)))
    assert analysis.per_trial["comm_exposed_ms"].isna().all()
    assert not any(h.startswith("Communication") for h in headlines(analysis))


def test_grouping_key_is_every_parameter_but_seed_and_the_swept_ones(tmp_path):
    store = ResultStore(tmp_path, "key")
    for tid, mb, seed, wd, rate in (
        ("a16", 16, 0, 0.05, 500.0),
        ("b16", 16, 1, 0.05, 540.0),
        ("a32", 32, 0, 0.05, 900.0),
        ("b32", 32, 1, 0.05, 960.0),
        ("wd16", 16, 0, 0.1, 500.0),
    ):
        add_trial(
            store,
            tid,
            num_workers=1,
            micro_batch_per_worker=mb,
            global_batch=mb,
            data_scaling="fixed",
            samples_per_epoch=1024,
            train_time_s=2048 / rate,
            throughput=rate,
            throughput_per_worker=rate,
            seed=seed,
            weight_decay=wd,
        )
    analysis = compute(load_sweep(store.root))
    groups = analysis.groups["batch"]
    assert sorted(len(g.trial_ids) for g in groups) == [1, 4]  # weight_decay splits; seed makes repeats
    (result,) = analysis.batch
    points = result.points.set_index("micro_batch_per_worker")
    assert points.loc[16, "throughput_per_worker"] == pytest.approx(520.0)  # median of the repeats
    assert (points.loc[16, "throughput_min"], points.loc[16, "throughput_max"]) == (500.0, 540.0)
    assert points.loc[32, "trials"] == 2


def test_memory_is_named_for_what_the_ranks_measured(tmp_path):
    (result,) = compute(load_sweep(batch_sweep(tmp_path))).batch
    assert result.memory == "process (resident) memory"
    result.rows = result.rows.assign(device="gpu")
    assert result.memory == "GPU memory" and "batch's GPU memory (4 of 8 GiB)" in result.recommendation


def test_a_knee_inside_the_repeats_spread_is_not_claimed(tmp_path):
    store = ResultStore(tmp_path, "noisy")
    for tid, mb, seed, rate in (
        ("a32", 32, 0, 950.0),
        ("b32", 32, 1, 1050.0),
        ("a64", 64, 0, 1000.0),
        ("b64", 64, 1, 1040.0),
    ):
        add_trial(
            store,
            tid,
            num_workers=1,
            micro_batch_per_worker=mb,
            global_batch=mb,
            data_scaling="fixed",
            samples_per_epoch=1024,
            train_time_s=2048 / rate,
            throughput=rate,
            throughput_per_worker=rate,
            seed=seed,
        )
    analysis = compute(load_sweep(store.root))
    (result,) = analysis.batch
    assert result.knee.micro_batch_per_worker == 32 and result.peak.micro_batch_per_worker == 64
    knee = result.knee_below_peak()
    assert knee is not None and not knee.established
    assert any(
        "the peak above the knee: not established (2 vs 2 repeat(s), too few to reach p ≤ 0.1" in h
        for h in headlines(analysis)
    )


def test_time_to_accuracy_uses_training_time_where_recorded(tmp_path):
    store = ResultStore(tmp_path, "clock")
    add_trial(
        store,
        "t",
        num_workers=1,
        micro_batch_per_worker=32,
        global_batch=32,
        data_scaling="fixed",
        samples_per_epoch=1024,
        train_time_s=20.0,
    )
    write_rows(
        store,
        "epochs",
        "t",
        [
            {"epoch": e, "val_accuracy": a, "elapsed_s": w, "train_elapsed_s": t}
            for e, (a, w, t) in enumerate([(0.5, 40.0, 10.0), (0.9, 70.0, 20.0)])
        ],
    )
    analysis = compute(load_sweep(store.root), target=0.8)
    assert analysis.accuracy_clock == "train_elapsed_s"
    assert analysis.per_trial["time_to_accuracy_s"].iloc[0] == 20.0


def accuracy_race(results: Path, times: dict[int, list[float]]) -> Path:
    """``times[mb]``: the training seconds at which each repeat of micro batch mb reaches 0.9 accuracy."""
    store = ResultStore(results, "race")
    for mb, per_repeat in times.items():
        for seed, seconds in enumerate(per_repeat):
            tid = f"m{mb}r{seed}"
            add_trial(
                store,
                tid,
                num_workers=1,
                micro_batch_per_worker=mb,
                global_batch=mb,
                data_scaling="fixed",
                samples_per_epoch=1024,
                train_time_s=30.0,
                seed=seed,
            )
            rows = [(0, 0.5, seconds / 2), (1, 0.9, seconds)]
            write_rows(
                store,
                "epochs",
                tid,
                [{"epoch": e, "val_accuracy": a, "elapsed_s": t, "train_elapsed_s": t} for e, a, t in rows],
            )
    return store.root


def test_the_fastest_to_accuracy_is_a_point_compared_under_the_rule(tmp_path):
    clear = compute(load_sweep(accuracy_race(tmp_path / "a", {16: [20.0, 21.0, 22.0], 32: [10.0, 11.0, 12.0]})), 0.8)
    (finding,) = [h for h in headlines(clear) if h.startswith("Time to")]
    assert finding.startswith(
        "Time to 0.800 validation accuracy: fastest point gb=32 mb=32, median 11 s (3 of 3 repeat(s) reached it); "
        "before the next, gb=16 mb=16 (median 21 s): established (3 vs 3 repeat(s), p = 0.1)"
    )
    assert finding.endswith("; 0 of 6 trial(s) never reached it.")
    # the fastest single trial (micro batch 16's, by a millisecond) does not make its point the fastest: points
    # go by their medians, and repeats that interleave establish nothing
    close = compute(load_sweep(accuracy_race(tmp_path / "b", {16: [9.999, 16.0, 30.0], 32: [10.0, 15.0, 20.0]})), 0.8)
    (finding,) = [h for h in headlines(close) if h.startswith("Time to")]
    assert "fastest point gb=32 mb=32, median 15 s" in finding
    assert "before the next, gb=16 mb=16 (median 16 s): not established (3 vs 3 repeat(s), p = 1 > 0.1" in finding


def test_a_single_trial_sweep_gets_a_report(tmp_path):
    store = ResultStore(tmp_path, "single")
    add_trial(
        store,
        "only",
        num_workers=1,
        micro_batch_per_worker=16,
        global_batch=16,
        data_scaling="fixed",
        samples_per_epoch=1024,
        train_time_s=20.0,
    )
    write_rows(
        store,
        "epochs",
        "only",
        [
            {"epoch": e, "train_loss": 2.0 - e, "val_accuracy": 0.3 + 0.1 * e, "elapsed_s": 10.0 * (e + 1)}
            for e in range(2)
        ],
    )
    report = analyze(store.root)
    text = report.read_text(encoding="utf-8")
    assert "No comparison: every group has one value" in text and "epochs.png" in text
    assert "Not analysed (one value of the swept quantity): strong: S1; batch: B1." in text


def test_two_sweeps_compare_side_by_side_with_ratios_of_matching_trials(tmp_path, capsys):
    slow = strong_sweep(tmp_path, amdahl_times(0.1, [1, 2, 4]), name="slow")
    fast = strong_sweep(tmp_path, {n: t / 2 for n, t in amdahl_times(0.1, [1, 2, 4]).items()}, name="fast")
    assert main([str(slow), str(fast), "--out", str(tmp_path / "both")]) == 0
    text = (tmp_path / "both" / "report.md").read_text(encoding="utf-8")
    assert "# Comparison: slow (cpu), fast (cpu)" in text and "speedup.png" in text
    ratios = matching_ratios(*(compute(load_sweep(s)) for s in (slow, fast)))
    assert ratios["num_workers"].tolist() == [1, 2, 4]
    assert ratios["throughput ratio"].to_numpy() == pytest.approx([2.0] * 3)
    with pytest.raises(AnalysisError, match="two or more sweeps"):
        compare([slow])


def test_energy_max_batch_economy_and_sequence_parallel_are_reported_when_present(tmp_path):
    store = ResultStore(tmp_path, "extras")
    for mb, rate, joules in ((16, 500.0, 0.8), (32, 900.0, 0.5), (64, 950.0, 0.6)):
        add_trial(
            store,
            f"b{mb}",
            num_workers=2,
            micro_batch_per_worker=mb,
            global_batch=2 * mb,
            data_scaling="per_worker",
            samples_per_epoch=2048,
            train_time_s=4096 / rate,
            throughput=rate,
            throughput_per_worker=rate / 2,
            joules_per_sample=joules,
            mfu=0.31,
            peak_mem_gib=mb / 16,
        )
    add_trial(
        store,
        "sp2",
        num_workers=2,
        sequence_parallel=2,
        micro_batch_per_worker=32,
        global_batch=32,
        data_scaling="per_worker",
        samples_per_epoch=2048,
        train_time_s=8.0,
        throughput=400.0,
        throughput_per_worker=200.0,
        peak_mem_gib=1.25,
    )
    (store.root / "max_batch").mkdir()
    pq.write_table(
        pa.table(
            {
                "configuration": [json.dumps({"model": "vit_micro", "precision": "fp32", "lr": 0.1})],
                "largest_micro_batch": [512],
                "peak_mem_gib": [7.5],
                "throughput": [1234.0],
            }
        ),
        store.root / "max_batch" / "m.parquet",
    )
    (store.root / "sweep.json").write_text(
        json.dumps(
            {
                "description": "which batch?",
                "economy": {
                    "wall_s": 100.0,
                    "duty_cycle": 0.42,
                    "median_setup_s": 3.0,
                    "median_later_setup_s": 1.5,
                    "launch_wall_s": 120.0,
                    "duty_cycle_from_launch": 0.35,
                    "devices": 2,
                },
            }
        )
    )
    analysis = compute(load_sweep(store.root))
    (pair,) = analysis.sequence_parallel.to_dict("records")
    assert (pair["sp_peak_mem_gib"], pair["dp_peak_mem_gib"]) == (1.25, 2.0)
    assert (pair["sp_throughput_per_gpu"], pair["dp_throughput_per_gpu"]) == (200.0, 450.0)
    report = analyze(store.root)
    text = report.read_text(encoding="utf-8")
    summary = json.loads((report.parent / "summary.json").read_text(encoding="utf-8"))
    assert summary["economy"]["duty_cycle"] == 0.42 and summary["economy"]["duty_cycle_from_launch"] == 0.35
    assert "**Question:** which batch?" in text
    assert "Fewest joules per sample: micro batch 32 (0.5 J/sample" in text and "joules_per_sample.png" in text
    assert "| model=vit_micro precision=fp32 | 512 | 7.5 | 1234 |" in text
    assert "Duty cycle 42%" in text and "35% from the sweep's launch (120 s)" in text
    assert "median trial setup 3 s (1.5 s after the first)" in text
    assert "| mfu |" in text or "mfu" in text.split("## Trials")[1]


def test_the_duty_cycle_on_cpus_states_the_ceiling_of_the_trials_that_ran_at_once(tmp_path):
    # 1-rank trials of 1 CPU (the default cpus_per_worker), one at a time, on a 2-CPU machine hold half of it:
    # 1 x 1 x 1 / 2
    sweep = batch_sweep(tmp_path)
    economy = {"wall_s": 100.0, "duty_cycle": 0.4, "devices": 2}
    (sweep / "sweep.json").write_text(json.dumps({"economy": economy}), encoding="utf-8")
    text = analyze(sweep).read_text(encoding="utf-8")
    assert (
        "Duty cycle 40%: timed rank-seconds over the sweep's wall time (100 s) × 2 device(s); on this CPU-only "
        "cluster a trial holds ranks × CPUs per rank of the CPUs (1 × 1 of 2) and at most 1 ran at once, so it can "
        "reach at most 50%." in text
    )


def test_most_at_once_counts_overlapping_trials_and_not_ones_that_merely_touch():
    times = pd.DataFrame(
        {
            "started_at": ["2026-01-01T00:00:00", "2026-01-01T00:00:05", "2026-01-01T00:00:06", "2026-01-01T00:00:10"],
            "finished_at": ["2026-01-01T00:00:10", "2026-01-01T00:00:08", "2026-01-01T00:00:12", "2026-01-01T00:00:11"],
        }
    )
    # 0-10, 5-8 and 6-12 overlap at 6-8 (three at once); 10-11 starts as the first ends
    assert most_at_once(times) == 3
    assert most_at_once(times.iloc[[0, 3]]) == 1
    assert most_at_once(pd.DataFrame({"num_workers": [1]})) == 1


def test_searched_configurations_are_labelled_by_what_differs_or_by_their_identity():
    one = {"model": "vit_b", "image_size": 224, "precision": "bf16", "engine": "deepspeed", "zero_stage": 0, "lr": 0.1}
    assert configuration_labels([one]) == ["model=vit_b image_size=224 precision=bf16 engine=deepspeed zero_stage=0"]
    other = {**one, "zero_stage": 3, "engine": "fsdp"}
    assert configuration_labels([one, other]) == ["engine=deepspeed zero_stage=0", "engine=fsdp zero_stage=3"]


def test_analysis_reads_a_sweep_from_before_versions_and_refuses_a_newer_one(tmp_path):
    from raysweep.core.schema import SCHEMA_VERSION

    root = strong_sweep(tmp_path, amdahl_times(0.1, [1, 2]))  # files without a version stamp
    (root / "sweep.json").write_text('{"description": "old"}')
    assert len(load_sweep(root).trials) == 2
    (root / "sweep.json").write_text(f'{{"schema_version": {SCHEMA_VERSION + 1}, "raysweep_version": "9.9"}}')
    with pytest.raises(AnalysisError, match=f"schema version {SCHEMA_VERSION + 1}.*raysweep 9.9 or newer"):
        load_sweep(root)
    assert main([str(root)]) == 2


# ---- the first screen, the rule over repeats, and plots that show the data as it is ----------------------


def test_first_screen_answers_in_one_sentence_then_says_what_was_measured(tmp_path):
    sweep = batch_sweep(tmp_path)
    versions = {"python": "3.11.7", "ray": "2.58.0", "torch": "2.14.1", "deepspeed": "0.18.0", "timm": "1.0.31"}
    manifest = {"description": "which batch", "versions": versions, "started_at": "2026-12-05T23:00:00+0000"}
    (sweep / "sweep.json").write_text(json.dumps(manifest), encoding="utf-8")
    text = analyze(sweep).read_text(encoding="utf-8")
    first_screen = text[: text.index("## Summary")]
    assert first_screen.index("**Question:** which batch") < first_screen.index("**Answer:** Micro batch 64 reaches")
    assert first_screen.index("**Answer:**") < first_screen.index("| what was measured |")
    # the knee's own share of the best (950 of 1000), not the threshold it passes, as the summary says it
    assert "**Answer:** Micro batch 64 reaches 95% of the best throughput per worker (the knee: the smallest " in text
    assert "(global batch 64): 95% of peak throughput per worker" in text
    for fact in (
        "| model | vit_micro_patch4_32 (parameter count not recorded) |",
        "| data | digits; 4096 training samples an epoch |",
        "| image size | 32 px |",
        "| precision | fp32 |",
        "| engine | deepspeed ZeRO-0 |",
        "| software | ray 2.58.0, torch 2.14.1, deepspeed 0.18.0, timm 1.0.31, python 3.11.7 |",
        "| date | 2026-12-05 23:00:00+0000 |",
        "| repeats | 1 completed trial(s) per point (4 point(s)) |",
    ):
        assert fact in first_screen, fact
    assert (
        "Not recorded by this sweep: the model's parameter count; raysweep's version (not in sweep.json); the CPU."
        in text
    )
    assert "**Rule:** a difference between two points is claimed when the exact two-sided Wilcoxon rank-sum" in text
    assert "**Comparisons:** " in text and "after Holm's procedure" in text
    summary = json.loads((sweep / "report" / "summary.json").read_text(encoding="utf-8"))
    assert summary["measured"]["engine"] == "deepspeed ZeRO-0" and summary["rule"].startswith("a difference")
    assert summary["not_recorded"][0] == "the model's parameter count"


def test_the_raysweep_version_and_checkout_are_shown_where_sweep_json_has_them(tmp_path):
    sweep = batch_sweep(tmp_path)
    versions = {"raysweep": "0.9.0", "raysweep_commit": "0123456789abcdef", "ray": "2.58.0"}
    (sweep / "sweep.json").write_text(json.dumps({"versions": versions}), encoding="utf-8")
    text = analyze(sweep).read_text(encoding="utf-8")
    assert "| software | raysweep 0.9.0, ray 2.58.0, checkout 0123456789ab |" in text
    assert "raysweep's version" not in text


def test_the_paper_beside_us_names_every_difference_of_setup_first(tmp_path):
    text = analyze(batch_sweep(tmp_path)).read_text(encoding="utf-8")
    paper = text[text.index("**The paper beside us**") :]
    assert (
        "- Setup differs from the paper's: model: vit_micro_patch4_32 here, ViT-B/16 (vit_base_patch16_224) in the "
        "paper; data: digits here, CIFAR images in the paper; devices: cpu here, NVIDIA GPUs in the paper." in paper
    )
    assert "draw no conclusion from one to the other" in paper
    assert "Batch size. Paper:" in paper and "not established (1 vs 1 repeat(s)" in paper


def repeated_strong_sweep(results: Path, rates: dict[int, list[float]]) -> Path:
    """Fixed job; ``rates[n]`` the timed rate of each repeat (seed) at n workers."""
    store = ResultStore(results, "repeated")
    for n, per_repeat in rates.items():
        for seed, rate in enumerate(per_repeat):
            add_trial(
                store,
                f"s{n}r{seed}",
                num_workers=n,
                micro_batch_per_worker=256 // n,
                global_batch=256,
                data_scaling="fixed",
                samples_per_epoch=4096,
                train_time_s=4096 * 2 / rate,
                throughput=rate,
                throughput_per_worker=rate / n,
                seed=seed,
            )
    return store.root


def test_a_speedup_is_claimed_only_where_the_rank_sum_test_passes(tmp_path):
    clear = compute(load_sweep(repeated_strong_sweep(tmp_path / "a", {1: [100, 102, 98], 2: [180, 185, 178]})))
    assert clear.best_strong().faster().established
    assert any("faster than 1: established (3 vs 3 repeat(s), p = 0.1)" in h for h in headlines(clear))
    noisy = compute(load_sweep(repeated_strong_sweep(tmp_path / "b", {1: [100, 130, 90], 2: [120, 95, 140]})))
    (finding,) = [h for h in headlines(noisy) if h.startswith("Strong scaling")]
    assert "faster than 1: not established (3 vs 3 repeat(s), p = 0.7 > 0.1; more than 30 repeats" in finding


def comm_repeats_sweep(results: Path, one_rank: list[float], two_ranks: list[float]) -> Path:
    store = ResultStore(results, "comm")
    for n, steps in ((1, one_rank), (2, two_ranks)):
        for seed, step in enumerate(steps):
            add_trial(
                store,
                f"n{n}r{seed}",
                num_workers=n,
                micro_batch_per_worker=32,
                global_batch=32 * n,
                data_scaling="per_worker",
                samples_per_epoch=1024 * n,
                train_time_s=10.0,
                step_time_ms=step,
                seed=seed,
            )
    return store.root


def test_exposed_communication_is_claimed_against_the_spread_of_both_step_times(tmp_path):
    slower = compute(load_sweep(comm_repeats_sweep(tmp_path / "a", [100, 101, 99], [120, 119, 122])))
    (finding,) = [h for h in headlines(slower) if h.startswith("Communication")]
    assert "takes 20 ms more than the same step on one rank" in finding and "established (3 vs 3" in finding
    noise = compute(load_sweep(comm_repeats_sweep(tmp_path / "b", [100, 110, 95], [104, 98, 108])))
    (finding,) = [h for h in headlines(noise) if h.startswith("Communication")]
    assert finding.startswith("Communication: no multi-rank step is established slower")


def test_the_report_counts_its_comparisons_and_marks_a_claim_that_does_not_pass_holm(tmp_path):
    # two comparisons: the weak-scaling rate per worker (all equal, p = 1) and the exposed communication (every
    # 2-rank step above every 1-rank one, p = 0.1); Holm over the two asks 0.1 / 2 of the smaller p: none holds
    sweep = comm_repeats_sweep(tmp_path, [100, 101, 99], [120, 119, 122])
    text = analyze(sweep).read_text(encoding="utf-8")
    assert (
        "1 of 1 multi-rank configuration(s) established slower); established (3 vs 3 repeat(s), p = 0.1) "
        "(per comparison only; not after Holm over 2 comparisons)." in text
    )
    assert (
        "**Comparisons:** 2 comparison(s) in this report; 1 difference(s) established per comparison, 0 after "
        "Holm's procedure over the 2 (family-wise level 0.1)." in text
    )
    summary = json.loads((sweep / "report" / "summary.json").read_text(encoding="utf-8"))
    assert summary["comparisons"] == {"count": 2, "established": 1, "established_after_holm": 0}


def test_a_straggler_is_claimed_against_the_other_ranks_over_the_repeats(tmp_path):
    store = ResultStore(tmp_path, "slow")
    for seed, (slow, other) in enumerate([(130.0, 100.0), (128.0, 101.0), (133.0, 99.0)]):
        tid = f"h{seed}"
        add_trial(
            store,
            tid,
            num_workers=2,
            micro_batch_per_worker=32,
            global_batch=64,
            data_scaling="fixed",
            samples_per_epoch=1024,
            train_time_s=10.0,
            step_time_ms=slow,
            slow_ranks="1",
            seed=seed,
        )
        rows = [
            {"rank": 0, "step_time_ms": slow, "busy_ms": other, "wait_ms": slow - other},
            {"rank": 1, "step_time_ms": slow, "busy_ms": slow, "wait_ms": 0.0},
        ]
        write_rows(store, "ranks", tid, rows)
    (finding,) = [h for h in headlines(compute(load_sweep(store.root))) if h.startswith("Stragglers")]
    assert finding.startswith("Stragglers: rank 1 (slowed on purpose: slow_ranks) is 1.30× the median")
    assert "slower than the others: established (3 vs 3 repeat(s), p = 0.1)" in finding


def test_overheads_show_the_whole_axis_with_values_and_no_legend_for_an_undrawn_series(tmp_path):
    from analysis.report.plots import Series, overhead_figure

    drawn = overhead_figure([Series("", compute(load_sweep(batch_sweep(tmp_path))))])
    (axes,) = drawn.figure.axes
    assert axes.get_ylim() == (0, 100)
    assert [t.get_text() for t in axes.get_legend().get_texts()] == ["waiting for data"]  # one rank: no comm
    assert [t.get_text() for t in axes.texts] == ["20%", "10%", "5%", "2%"]
    assert "waiting for data" in drawn.caption and "communication" not in drawn.caption


def test_speedup_sits_on_linear_axes_with_a_straight_ideal_and_the_fit_drawn_only_where_there_is_one(tmp_path):
    from analysis.report.plots import Series, scaling_figure

    three = scaling_figure(
        [Series("", compute(load_sweep(strong_sweep(tmp_path, amdahl_times(0.1, [1, 2, 4])))))], "strong"
    )
    speedup, efficiency = three.figure.axes
    assert speedup.get_xscale() == speedup.get_yscale() == "linear" and speedup.get_ylim()[0] == 0
    assert speedup.get_xlim()[0] == 0 and efficiency.get_ylim()[0] == 0
    assert "thick: Amdahl fit" in three.caption
    two = strong_sweep(tmp_path / "two", amdahl_times(0.1, [1, 2]))
    drawn = scaling_figure([Series("", compute(load_sweep(two)))], "strong")
    assert "no Amdahl fit drawn (fewer than 3 worker counts)" in drawn.caption
    assert "Amdahl fit" not in [t.get_text() for t in drawn.figure.axes[0].get_legend().get_texts()]


def test_epoch_curves_are_named_by_the_swept_parameters_not_by_trial_ids(tmp_path):
    from analysis.report.plots import Series, epochs_figure

    store = ResultStore(tmp_path, "epochs")
    for mb in (16, 32):
        add_trial(
            store,
            f"t{mb}",
            num_workers=1,
            micro_batch_per_worker=mb,
            global_batch=mb,
            samples_per_epoch=64,
            train_time_s=1.0,
        )
        write_rows(
            store, "epochs", f"t{mb}", [{"epoch": e, "train_loss": 1.0 / (e + 1), "elapsed_s": e} for e in (0, 1)]
        )
    drawn = epochs_figure([Series("", compute(load_sweep(store.root)))])
    assert [t.get_text() for t in drawn.figure.axes[0].get_legend().get_texts()] == ["gb=16 mb=16", "gb=32 mb=32"]


def test_a_wide_table_is_split_into_tables_led_by_its_first_column():
    from analysis.report.render import MAX_COLUMNS, Table, render_markdown

    columns = [f"c{i}" for i in range(10)]
    text = render_markdown([Table(columns, [[str(i) for i in range(10)]])])
    headers = [line for line in text.splitlines() if line.startswith("| c0")]
    assert headers == ["| c0 | c1 | c2 | c3 | c4 | c5 | c6 |", "| c0 | c7 | c8 | c9 |"]
    assert all(line.count("|") - 1 <= MAX_COLUMNS for line in text.splitlines() if line.startswith("|"))


def test_the_summary_counts_the_trials_the_scheduler_stopped_at_each_rung(tmp_path):
    root = strong_sweep(tmp_path, amdahl_times(0.1, [1, 2]))
    store = ResultStore(tmp_path, "strong")
    for trial_id, reached in (("early", 1), ("middle", 2), ("also-early", 1)):
        add_trial(store, trial_id, status="stopped", num_workers=1, micro_batch_per_worker=256, global_batch=256)
        write_rows(store, "epochs", trial_id, [{"epoch": e, "val_accuracy": 0.5} for e in range(reached)])
    data = load_sweep(root)
    assert data.left_out == {"stopped": 3} and data.stopped_at == {1: 2, 2: 1}
    text = analyze(root).read_text(encoding="utf-8")
    assert (
        "The sweep's scheduler stopped 3 trial(s): 2 after epoch 1; 1 after epoch 2; their timed epochs count for "
        "throughput, not for accuracy." in text
    )


def test_a_stopped_trials_timed_epochs_count_for_throughput_but_its_accuracy_does_not(tmp_path):
    """Batch 32's point: a completed trial at 100 samples/s, accuracy 0.9, and a stopped one at 200 samples/s
    whose last epoch had 0.3: the point's throughput is the median of both, its accuracy the completed one's,
    and time to accuracy and the per-trial table know only the completed trials."""
    store = ResultStore(tmp_path, "b")
    common = {"num_workers": 1, "samples_per_epoch": 64, "epochs": 2}
    for trial_id, mb, status, rate, accuracy in (
        ("a16", 16, "completed", 50.0, 0.95),
        ("a32", 32, "completed", 100.0, 0.9),
        ("s32", 32, "stopped", 200.0, 0.3),
    ):
        add_trial(
            store, trial_id, **common, status=status, micro_batch_per_worker=mb, global_batch=mb, throughput=rate,
            throughput_per_worker=rate, timed_s=1.0, timed_samples=rate, train_time_s=1.0, val_accuracy=accuracy,
        )  # fmt: skip
        write_rows(store, "epochs", trial_id, [{"epoch": 0, "val_accuracy": accuracy, "elapsed_s": 1.0}])
    data = load_sweep(store.root)
    assert list(data.trials["trial_id"]) == ["a16", "a32"] and list(data.stopped["trial_id"]) == ["s32"]
    analysis = compute(data)
    (batch,) = analysis.batch
    at32 = batch.points.set_index("micro_batch_per_worker").loc[32]
    assert at32.throughput_per_worker == 150.0 and at32.trials == 2  # median of 100 and 200: both timed
    assert at32.val_accuracy == 0.9  # the stopped trial's 0.3 is an early epoch's, not a final accuracy
    completed, stopped = batch.at(32, "val_accuracy")
    assert completed == 0.9 and pd.isna(stopped)
    assert list(analysis.per_trial["trial_id"]) == ["a16", "a32"]
    assert set(analysis.data.epochs["trial_id"]) == {"a16", "a32"}
