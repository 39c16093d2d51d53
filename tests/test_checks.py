"""Planning checks: dataset and model names against the registries, data directories on disk."""

from __future__ import annotations

import pytest

from raysweep.checks import check_trial
from raysweep.core.errors import UsageError
from raysweep.core.params import TrialParams


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
