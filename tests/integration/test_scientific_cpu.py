"""The ``scientific`` space's array data refused when its channels are not the model's ``in_chans``. (Its shrunk
SP 2 against SP 1 trials run in test_tensor_parallel_cpu.py's sweep, beside the other parallel spaces'.)"""

from __future__ import annotations

from pathlib import Path

import yaml

from tests.image_folders import make_array_folder
from tests.integration.conftest import explain, run_cli

SHRUNK = {
    "model": "vit_micro_patch4_32",  # class token, pooled by it; 3 heads; 32 px / 4 = 64 patches + 1
    "image_size": 32,
    "train_samples": 16,
    "micro_batch_per_worker": 4,
    "precision": "fp32",
    "dataset": "arrays",
}


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
