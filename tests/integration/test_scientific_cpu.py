"""The ``scientific`` space shrunk to CPU: a class-token ViT (3 heads, 65 tokens) trained from a folder of
8-channel uint16 arrays of mixed sizes, SP 2 with every block checkpointed on two ranks against SP 1 on one.

SP 2 on 2 ranks is one data-parallel rank: the same samples and crops as SP 1 on one rank, and
(trainers/model/sequence_parallel.py) the exact gradient although 65 tokens need padding and 3 heads split 2 and 1;
checkpointing changes no value. So the first epoch's loss is SP 1's.
"""

from __future__ import annotations

from pathlib import Path

import pytest
import yaml

from raysweep.planning.space import load_space
from tests.image_folders import make_array_folder
from tests.integration.conftest import explain, run_cli, table

SHRUNK = {
    "model": "vit_micro_patch4_32",  # class token, pooled by it; 3 heads; 32 px / 4 = 64 patches + 1
    "image_size": 32,
    "train_samples": 16,
    "micro_batch_per_worker": 4,
    "precision": "fp32",
    "dataset": "arrays",
}


def test_sp2_with_checkpointing_trains_8_channel_uint16_arrays_as_sp1_does(tmp_path: Path):
    data = make_array_folder(tmp_path / "arrays", channels=8, dtype="uint16")
    bundled = load_space("scientific")
    space = {
        "description": "scientific shrunk: SP 2 with checkpointing on 2 ranks against SP 1 on 1 rank",
        "axes": [
            {"sequence_parallel": [1], "num_workers": [1], "activation_checkpointing": [0]},
            {"sequence_parallel": [2], "num_workers": [2], "activation_checkpointing": [1]},
        ],
        "fixed": bundled.fixed | SHRUNK | {"data_dir": str(data)},
    }
    path = tmp_path / "scientific.yaml"
    path.write_text(yaml.safe_dump(space, sort_keys=False))
    proc = run_cli(
        *("--space", str(path), "--results-dir", str(tmp_path), "--name", "sci"),
        *("--max-concurrent-trials", "1", "--no-report", "--no-dashboard"),
    )
    assert proc.returncode == 0, explain(proc)
    sweep = tmp_path / "sci"
    trials = sorted(table(sweep, "trials").to_pylist(), key=lambda r: r["sequence_parallel"])
    assert [(r["status"], r["sequence_parallel"], r["in_chans"], r["activation_checkpointing"]) for r in trials] == [
        ("completed", 1, 8, 0),
        ("completed", 2, 8, 1),
    ], explain(proc)
    sp1, sp2 = trials
    epochs = {e["trial_id"]: e for e in table(sweep, "epochs").to_pylist() if e["epoch"] == 0}
    assert epochs[sp2["trial_id"]]["train_loss"] == pytest.approx(epochs[sp1["trial_id"]]["train_loss"], rel=1e-4)
    assert epochs[sp1["trial_id"]]["val_accuracy"] is not None

    # the statistics were measured once, beside the folder, and both trials read them
    assert len(list((data / ".raysweep-prepared").glob("*-arrays-stats/channel_stats.json"))) == 1


def test_channels_unlike_in_chans_are_refused_before_any_trial(tmp_path: Path):
    """Planning (on the started cluster, overlapping its start) refuses the trial: exit 2, one line, no trial."""
    data = make_array_folder(tmp_path / "arrays", channels=8, dtype="uint16")
    space = {"description": "in_chans unlike the data", "axes": {"seed": [0]}, "fixed": SHRUNK | {"in_chans": 3}}
    path = tmp_path / "mismatch.yaml"
    path.write_text(yaml.safe_dump(space, sort_keys=False))
    proc = run_cli(
        *("--space", str(path), "--data-dir", str(data), "--results-dir", str(tmp_path), "--name", "bad"),
        "--no-dashboard",
        timeout=400,
    )
    assert proc.returncode == 2, explain(proc)
    assert "in_chans=3 but the arrays in" in proc.stderr and "hold 8 channels; set in_chans=8" in proc.stderr
    assert not (tmp_path / "bad" / "trials").exists(), explain(proc)
