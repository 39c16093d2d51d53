"""Planning checks: dataset and model names against the registries, data directories on disk."""

from __future__ import annotations

import subprocess
import sys
from pathlib import Path

import pytest

from raysweep.core.errors import UsageError
from raysweep.core.params import TrialParams
from raysweep.planning.checks import check_trial, check_values
from trainers.model.models import PRESETS
from trainers.model.sequence_parallel_check import declared_token_shape, token_shape

REPO = Path(__file__).resolve().parents[1]


def params(**values) -> TrialParams:
    return TrialParams.from_dict(values)


@pytest.mark.parametrize(
    ("values", "fragments"),
    [
        ({"dataset": "imagenet"}, ["dataset='imagenet'", "digits", "synthetic", "cifar10", "cifar100", "imagefolder"]),
        ({"model": "vit_nonexistent_xyz"}, ["model='vit_nonexistent_xyz'", "vit_micro_patch4_32"]),
    ],
)
def test_unknown_names_are_refused_naming_the_field_and_the_choices(values, fragments):
    with pytest.raises(UsageError) as e:
        check_trial(params(**values))
    for fragment in fragments:
        assert fragment in str(e.value)


def test_check_trial_also_validates_the_values():
    with pytest.raises(UsageError, match="num_workers must be a positive integer"):
        check_trial(params(num_workers=0))


def test_data_dir_is_not_looked_at_when_the_files_are_on_the_cluster(tmp_path):
    check_trial(params(dataset="cifar10", data_dir=str(tmp_path / "nowhere")), local_files=False)


@pytest.mark.parametrize("dataset", ["cifar10", "cifar100", "imagefolder"])
def test_nonexistent_data_dir_is_rejected_naming_it_and_download(tmp_path, dataset):
    missing = tmp_path / "nowhere"
    with pytest.raises(UsageError) as e:
        check_trial(params(dataset=dataset, data_dir=str(missing)))
    assert f"data_dir {missing} is not a directory" in str(e.value)
    assert "--download" in str(e.value)


def test_data_dir_that_is_a_file_is_rejected(tmp_path):
    file = tmp_path / "cifar.tar.gz"
    file.write_bytes(b"")
    with pytest.raises(UsageError, match="is not a directory"):
        check_trial(params(dataset="cifar10", data_dir=str(file)))


def test_nonexistent_data_dir_is_fine_when_it_will_be_downloaded(tmp_path):
    check_trial(params(dataset="cifar10", data_dir=str(tmp_path / "new"), download=True))


# ---- before Ray starts: the values and the model's declared shape, no timm -------------------


@pytest.mark.parametrize(
    ("values", "message"),
    [
        ({"image_size": 3}, "image_size=3 is smaller than the 4-pixel patches of model=vit_micro_patch4_32"),
        ({"model": "vit_base_patch16_224", "image_size": 8}, "smaller than the 16-pixel patches"),
        (
            {"model": "vit_micro_avg_patch4_32", "num_workers": 8, "sequence_parallel": 8},
            "sequence_parallel=8 exceeds the 4 attention heads",
        ),
        ({"lr": float("nan")}, "lr must be a finite number"),
    ],
)
def test_check_values_refuses_what_can_never_train_before_ray_starts(values, message):
    with pytest.raises(UsageError, match=message):
        check_values(params(**values))


def test_check_values_passes_what_trains_and_leaves_unknown_timm_models_to_planning():
    check_values(params(model="vit_micro_avg_patch4_32", num_workers=2, sequence_parallel=2))
    check_values(params(num_workers=2, sequence_parallel=2))  # a class token: kept whole, the rest padded
    check_values(params(model="vit_micro_avg_patch4_32", num_workers=3, sequence_parallel=3))  # heads 2,1,1
    check_values(params(model="vit_micro_avg_patch4_32", image_size=20, num_workers=2, sequence_parallel=2))  # 25
    check_values(params(image_size=30))  # 7x7 patches of 4 px: timm drops the last 2 px, it trains
    check_values(params(model="deit_tiny_patch16_224", num_workers=2, sequence_parallel=2))  # heads: timm's


@pytest.mark.parametrize("model", sorted(PRESETS))
@pytest.mark.parametrize("image_size", [0, 64])
def test_a_presets_declared_shape_is_the_shape_timm_builds(model, image_size):
    assert declared_token_shape(model, image_size) == token_shape(model, image_size)


def test_checking_a_preset_trial_imports_neither_timm_nor_deepspeed():
    """The driver checks every trial before it starts; for raysweep's presets that needs no timm (seconds to import)."""
    code = (
        "import sys\n"
        "from raysweep.core.params import TrialParams\n"
        "from raysweep.planning.checks import check_trial, check_values\n"
        "trial = TrialParams(model='vit_micro_patch4_32', dataset='digits')\n"
        "check_values(trial); check_trial(trial)\n"
        "print(sorted(m for m in ('timm', 'torchvision', 'deepspeed') if m in sys.modules))\n"
    )
    proc = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, timeout=300, cwd=REPO)
    assert proc.returncode == 0, proc.stderr
    assert proc.stdout.strip() == "[]", proc.stdout
