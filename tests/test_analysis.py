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

from analysis import AnalysisError, analyze
from analysis.__main__ import main
from analysis.batch import knee_index
from analysis.compute import compute
from analysis.groups import BATCH, STRONG, find_groups
from analysis.load import load_sweep
from raysweep.store import ResultStore

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
    "compile": False,
    "grad_accum_steps": 1,
    "placement_strategy": "PACK",
    "slow_ranks": "",
    "slow_factor": 0.3,
    "epochs": 2,
}


def add_trial(store: ResultStore, trial_id: str, **values) -> None:
    row = {**CONFIG, **values}
    if "train_time_s" in row and "throughput" not in row:
        row["throughput"] = row["samples_per_epoch"] * row["epochs"] / row["train_time_s"]
        row["throughput_per_worker"] = row["throughput"] / row["num_workers"]
    store.write_rows("trials", trial_id, [row])


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
    assert "50% of the peak-throughput batch's memory (4 of 8 GiB)" in result.recommendation
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
    store.write_rows(
        "epochs",
        "fast",
        [
            {"epoch": e, "val_accuracy": a, "elapsed_s": t}
            for e, (a, t) in enumerate([(0.5, 10.0), (0.8, 20.0), (0.95, 30.0)])
        ],
    )
    store.write_rows(
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
    store.write_rows(
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
    assert [(g.key["model"], g.points, g.key["lr"]) for g in groups] == [("vit_a", 2, "rule"), ("vit_b", 2, "rule")]


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
        store.write_rows("epochs", f"b{mb}", [{"epoch": 0, "val_accuracy": 0.9, "elapsed_s": 1000.0 / mb}])
    add_trial(store, "crashed", status="failed", num_workers=8, micro_batch_per_worker=32, global_batch=256)
    add_trial(store, "too-big", status="oom", num_workers=1, micro_batch_per_worker=512, global_batch=512)
    out = tmp_path / "out"
    report = analyze(store.root, out_dir=out)
    assert report == out / "report.md"
    for name in ("report.md", "report.html", "scaling.parquet", "summary.json"):
        assert (out / name).stat().st_size > 0
    text = report.read_text(encoding="utf-8")
    assert "1 failed, 1 oom" in text
    assert text.index("Headline findings") < text.index("| group")
    summary = json.loads((out / "summary.json").read_text(encoding="utf-8"))
    assert summary["amdahl_fit"]["serial_fraction"] == pytest.approx(0.1, abs=1e-6)
    assert summary["knee"]["micro_batch"] == 32
    assert summary["left_out"] == {"failed": 1, "oom": 1}
    pngs = sorted(out.glob("*.png"))
    assert {p.name for p in pngs} == set(summary["plots"]["made"])
    assert {"speedup.png", "efficiency.png", "batch_throughput.png", "batch_overheads.png"} <= {p.name for p in pngs}
    for png in pngs:
        assert png.read_bytes().startswith(PNG_MAGIC) and png.stat().st_size > 1000
        assert f"]({png.name})" in text
    assert text.count("](") == len(pngs)
    html = (out / "report.html").read_text(encoding="utf-8")
    assert html.count('src="data:image/png;base64,') == len(pngs) and "](" not in html
    table = pq.read_table(out / "scaling.parquet").to_pandas().set_index("trial_id")
    assert len(table) == 6 and table.loc["s4", "scaling_group"] == "S1"
    assert table.loc["b16", "batch_group"] == table.loc["b64", "batch_group"] == summary["knee"]["group"]
    assert table.loc["s2", "karp_flatt"] == pytest.approx(0.1, abs=1e-6)
    assert summary["plots"]["skipped"] == {} and len(pngs) == 6


def test_plots_without_data_are_skipped_and_said_so(tmp_path):
    sweep = strong_sweep(tmp_path, amdahl_times(0.1, [1, 2, 4]))
    report = analyze(sweep)
    assert sorted(p.name for p in report.parent.glob("*.png")) == ["efficiency.png", "speedup.png"]
    skipped = json.loads((report.parent / "summary.json").read_text(encoding="utf-8"))["plots"]["skipped"]
    assert set(skipped) == {"batch_throughput", "batch_overheads", "batch_accuracy", "time_to_accuracy"}
    text = report.read_text(encoding="utf-8")
    assert "## Plots not made" in text and "`time_to_accuracy`: the epochs table has no validation accuracy" in text
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
        ("one_point", "nothing to compare"),
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
    elif case == "one_point":
        argv = [str(strong_sweep(tmp_path, {4: 1.0}))]
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
    assert err.count("\n") == 1 and err.startswith("analysis: error: ") and message in err
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
