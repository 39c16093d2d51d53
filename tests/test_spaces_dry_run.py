"""Every bundled space, dry run in-process: the trial table it would run on an 8-GPU node, notes for what
is dropped, the GPU-only skip, and combinations a space could be pushed into that are refused before launch."""

from __future__ import annotations

from pathlib import Path

import pytest
import torch

from raysweep.planning.space import SPACES_DIR
from tests.cli_helpers import no_sweep_starts, table_rows  # noqa: F401
from tests.cli_helpers import run_main as dry_run

SPACES = sorted(p.stem for p in SPACES_DIR.glob("*.yaml"))
SPACES_DOC = Path(__file__).resolve().parents[1] / "docs" / "spaces.md"
PAPER_SCALE = ("--dry-run", "--assume-gpus", "8", "--model", "vit_base_patch16_224", "--dataset", "synthetic")
# Sequence parallelism needs the class-token-free, average-pooled ViT-B/16 the space names itself.
SPACE_MODEL = {"seq_parallel": "vit_base_patch16_avg_224"}
# batch_grid fixes the digits' 8 px, smaller than ViT-B/16's 16 px patches: refused unless set.
SPACE_ARGS = {"batch_grid": ("--set", "image_size=224"), "tuned_batch": ("--set", "image_size=224")}

# Trials each space plans on one node of 8 GPUs (placement's spread trials need a node per rank); the spaces
# of the paper's findings run every point three times.
PLANNED_ON_8_GPUS = {
    "accum_grid": 8 * 3,
    "batch_grid": 5 * 3,
    "engine": 9,  # ZeRO 0-3, DDP, Accelerate, FSDP2 with and without resharding, megatron
    "heterogeneity": 3 * 3,
    "model_parallel": 24,  # 3 resolutions x (DP 8; TP 2, 4 under ddp and megatron; SP 2, 4, 8)
    "optimizers": 3,
    "placement": 2,
    "precision": 3,
    "scientific": 24,  # 3 resolutions x SP 1, 2, 4, 8 (one group each) x checkpointing off and on
    "seq_parallel": 15,  # 3 resolutions x (SP 1, 2, 4 on as many ranks, and SP 1 on 2 and 4 ranks)
    "strong_scaling": 4 * 3,
    "tuned_batch": 2 * 5 * 3 * 8,  # adaptive: 2 arms x 5 batch sizes x 3 repeats, each an Optuna study of 8 trials
    "weak_scaling": 4 * 3,
    "zero_stages": 4,
}
# Spaces whose trials Optuna proposes as the sweep goes: their dry run prints the search and the budget
ADAPTIVE = ("tuned_batch",)


def first_round(out: str) -> list[dict[str, str]]:
    """The planned trials of the first repeat (every trial where the space has no repeats); a run of one repeat
    (``ONE_ROUND``) keeps the grid's order, where more rounds each run in a seeded random order."""
    return [row for row in table_rows(out) if row.get("repeat", "0") == "0"]


ONE_ROUND = ("--repeats", "1")


def test_repeats_carry_their_index_and_seed_into_the_trial_table(capsys):
    code, out, err = dry_run(capsys, "--space", "strong_scaling", *PAPER_SCALE, "--repeats", "2")
    assert code == 0, err
    rows = table_rows(out)
    rounds = [[(r["num_workers"], r["seed"]) for r in rows if r["repeat"] == str(k)] for k in range(2)]
    assert [sorted(r) for r in rounds] == [[(w, str(k)) for w in ("1", "2", "4", "8")] for k in range(2)]
    assert [r["repeat"] for r in rows] == ["0"] * 4 + ["1"] * 4  # round by round


def test_every_bundled_space_is_expected_here_and_in_the_guide():
    assert sorted(PLANNED_ON_8_GPUS) == SPACES
    guide = SPACES_DOC.read_text(encoding="utf-8")
    for name in SPACES:
        assert f"| `{name}` |" in guide, f"docs/spaces.md's spaces table has no row for {name}"


@pytest.mark.parametrize("name", [s for s in SPACES if s not in ADAPTIVE])
def test_space_dry_runs_at_paper_scale_on_8_gpus(capsys, name):
    model = SPACE_MODEL.get(name, "vit_base_patch16_224")
    args = [a if a != "vit_base_patch16_224" else model for a in PAPER_SCALE]
    code, out, err = dry_run(capsys, "--space", name, *args, *SPACE_ARGS.get(name, ()))
    assert code == 0, err
    rows = table_rows(out)
    assert len(rows) == PLANNED_ON_8_GPUS[name], out
    assert f"{len(rows)} trials; dry run: nothing started." in out
    for row in rows:
        assert row["model"] == model and row["dataset"] == "synthetic"
        assert row["device"] == "gpu" and "GPU" in row["needs"]
        # Ranks of one sequence- or tensor-parallel group share their samples: only num_workers / (SP x TP)
        # replicas add to it.
        replicas = int(row["num_workers"]) // int(row.get("sequence_parallel", 1)) // int(row.get("tensor_parallel", 1))
        assert int(row["global_batch"]) == (
            int(row["micro_batch_per_worker"]) * int(row["grad_accum_steps"]) * replicas
        )


@pytest.mark.parametrize("name", ADAPTIVE)
def test_adaptive_space_dry_runs_its_search_and_budget_at_paper_scale(capsys, name):
    code, out, err = dry_run(capsys, "--space", name, *PAPER_SCALE, *SPACE_ARGS.get(name, ()))
    assert code == 0, err
    assert f"budget: {PLANNED_ON_8_GPUS[name]} trials" in out, out
    assert "search: optuna, maximise val_accuracy" in out and "scheduler: asha" in out, out


def test_accum_grid_holds_the_global_batch_in_one_grid_and_the_micro_batch_in_the_other(capsys):
    code, out, err = dry_run(capsys, "--space", "accum_grid", *PAPER_SCALE, *ONE_ROUND)
    assert code == 0, err
    rows = first_round(out)
    fixed_global, fixed_micro = rows[:4], rows[4:]
    assert [int(r["grad_accum_steps"]) for r in fixed_global] == [1, 2, 4, 8]
    assert {r["global_batch"] for r in fixed_global} == {"256"}
    assert [int(r["micro_batch_per_worker"]) for r in fixed_global] == [128, 64, 32, 16]
    assert [int(r["grad_accum_steps"]) for r in fixed_micro] == [1, 2, 4, 8]
    assert {r["micro_batch_per_worker"] for r in fixed_micro} == {"32"}


def test_strong_scaling_keeps_the_global_batch_and_weak_scaling_grows_it(capsys):
    _, out, _ = dry_run(capsys, "--space", "strong_scaling", *PAPER_SCALE, *ONE_ROUND)
    strong = first_round(out)
    assert [r["num_workers"] for r in strong] == ["1", "2", "4", "8"]
    assert {r["global_batch"] for r in strong} == {"256"}
    _, out, _ = dry_run(capsys, "--space", "weak_scaling", *PAPER_SCALE, *ONE_ROUND)
    weak = first_round(out)
    assert [int(r["global_batch"]) for r in weak] == [32, 64, 128, 256]
    assert {r["micro_batch_per_worker"] for r in weak} == {"32"}


def test_placement_on_one_node_drops_the_spread_trials_with_a_note(capsys):
    code, out, err = dry_run(capsys, "--space", "placement", *PAPER_SCALE)
    assert code == 0, err
    assert {r["placement_strategy"] for r in first_round(out)} == {"STRICT_PACK"}
    notes = [line for line in out.splitlines() if line.startswith("dropped: ")]
    assert len(notes) == 2
    for workers, note in zip((2, 4), notes):
        assert f"num_workers={workers} placement_strategy=STRICT_SPREAD" in note
        assert f"needs a node for each of its {workers} ranks; the cluster has 1 node" in note


def test_scaling_spaces_drop_trials_bigger_than_the_node_with_a_note(capsys):
    for name in ("strong_scaling", "weak_scaling"):
        code, out, err = dry_run(capsys, "--space", name, *PAPER_SCALE[:2], "2", *ONE_ROUND)
        assert code == 0, err
        assert [r["num_workers"] for r in first_round(out)] == ["1", "2"]
        notes = [line for line in out.splitlines() if line.startswith("dropped: ")]
        assert [n.split()[2] for n in notes] == ["num_workers=4", "num_workers=8"], out
        assert all("do not fit" in n and "cluster: 16 CPU + 2 GPU" in n for n in notes)


def test_heterogeneity_scales_to_8_workers_with_set(capsys):
    code, out, err = dry_run(capsys, "--space", "heterogeneity", *PAPER_SCALE, "--set", "num_workers=8")
    assert code == 0, err
    assert {r["num_workers"] for r in first_round(out)} == {"8"}


@pytest.mark.skipif(torch.cuda.device_count() > 0, reason="this machine has a GPU")
def test_gpu_only_space_dry_run_without_gpus_says_it_would_be_skipped(capsys, tmp_path):
    code, out, err = dry_run(capsys, "--space", "precision", "--dry-run", "--results-dir", str(tmp_path / "r"))
    assert code == 0
    assert out == ""
    assert "space precision needs a GPU and this machine has none; would be skipped" in err
    assert "--assume-gpus" in err
    assert not (tmp_path / "r").exists()


@pytest.mark.parametrize(
    ("argv", "message"),
    [
        (["--space", "optimizers", "--set", "zero_stage=2"], "optimizer=lamb needs zero_stage=0"),
        (["--space", "zero_stages", "--set", "engine=ddp"], "zero_stage > 0 needs engine=deepspeed"),
        (["--space", "zero_stages", "--set", "compile=true"], "compile=true is not supported with zero_stage=3"),
        (["--space", "weak_scaling", "--set", "train_samples=0"], "data_scaling=per_worker needs train_samples > 0"),
        (["--space", "accum_grid", "--set", "global_batch=[100]"], "global_batch=100 is not divisible"),
        (["--space", "heterogeneity", "--set", "slow_ranks=[2]"], "slow_ranks [2] outside 0..1"),
        (["--space", "precision", "--set", "device=cpu", "--assume-gpus", "1"], "precision=bf16 needs a GPU"),
    ],
)
def test_combinations_a_space_cannot_run_are_refused_before_launch(capsys, argv, message):
    code, out, err = dry_run(capsys, *argv, "--dry-run")
    assert code == 2 and out == ""
    assert message in err and err.count("\n") == 1


def test_model_parallel_splits_8_ranks_three_ways_at_one_global_batch(capsys):
    code, out, err = dry_run(capsys, "--space", "model_parallel", "--dry-run", "--assume-gpus", "8")
    assert code == 0, err
    rows = table_rows(out)
    splits = {(r["engine"], int(r["tensor_parallel"]), int(r["sequence_parallel"])) for r in rows}
    assert splits == {
        ("ddp", 1, 1),
        *((engine, tp, 1) for engine in ("ddp", "megatron") for tp in (2, 4)),
        *(("ddp", 1, sp) for sp in (2, 4, 8)),
    }
    for row in rows:  # micro batch = 8 / data-parallel ranks
        dp = 8 // (int(row["tensor_parallel"]) * int(row["sequence_parallel"]))
        assert (row["num_workers"], row["global_batch"], int(row["micro_batch_per_worker"])) == ("8", "8", 8 // dp)
    assert {r["image_size"] for r in rows} == {"1024", "2048", "4096"}


def test_engine_space_lists_megatron_on_gpus_and_drops_it_without_them(capsys):
    code, out, err = dry_run(capsys, "--space", "engine", "--dry-run", "--assume-gpus", "2")
    assert code == 0, err
    assert "megatron" in {r["engine"] for r in table_rows(out)}
    code, out, err = dry_run(capsys, "--space", "engine", "--dry-run", "--assume-gpus", "0")
    assert code == 0, err
    assert "megatron" not in {r["engine"] for r in table_rows(out)}
    assert "dropped: trial" in out and "engine=megatron" in out and "needs 2 x (1 CPU + 1 GPU)" in out
