"""``compile=auto`` in a real CPU sweep: the ranks decide, the trials table records the choice and its reason."""

from __future__ import annotations

from tests.integration.conftest import explain, on_shared, run_cli, table

CPU_REASON = "auto: eager, CPU trial (auto compiles GPU trials only)"


def test_an_auto_trial_on_cpu_runs_eager_and_its_row_says_why(tmp_path, shared_ray):
    proc = run_cli(
        "--space", "batch_grid", "--repeats", "1", "--set", "compile=[auto,false]",
        "--set", "micro_batch_per_worker=[16]", "--set", "dataset=synthetic", "--set", "image_size=32",
        "--set", "epochs=1", "--set", "max_steps_per_epoch=3", "--set", "warmup_steps=1",
        "--set", "checkpoint_every=0",
        "--no-dashboard", "--no-report", "--results-dir", str(tmp_path), "--name", "auto", *on_shared(shared_ray),
        timeout=600,
    )  # fmt: skip
    assert proc.returncode == 0, explain(proc)
    # the plan printed at the start shows the choice and its reason
    assert "compile_choice" in proc.stdout and f"compile, trial 0: {CPU_REASON}" in proc.stdout
    rows = {r["compile"]: r for r in table(tmp_path / "auto", "trials").to_pylist()}
    assert set(rows) == {"auto", "false"}
    for row in rows.values():
        assert row["status"] == "completed", row["error"]
        assert row["compiled"] is False and row["throughput"] > 0
    assert rows["auto"]["compile_reason"] == CPU_REASON
    assert rows["false"]["compile_reason"] == "compile=false"
