"""What decides which trials may share a worker group, and how a trial finds its checkpoint in one."""

from __future__ import annotations

from pathlib import Path

from ray.train import Checkpoint

from raysweep.core.params import TrialParams
from raysweep.runtime.train_run import shape_of
from raysweep.runtime.worker_groups import last_checkpoint, remember_checkpoint


def test_trials_differing_in_what_they_train_share_a_shape():
    base = TrialParams(num_workers=2, micro_batch_per_worker=16, seed=0)
    assert shape_of(base) == shape_of(TrialParams(num_workers=2, micro_batch_per_worker=256, seed=3, epochs=5))


def test_ranks_devices_cpus_or_placement_make_another_shape():
    base = TrialParams(num_workers=2)
    for other in (
        TrialParams(num_workers=4),
        TrialParams(num_workers=2, device="gpu"),
        TrialParams(num_workers=2, cpus_per_worker=2),
        TrialParams(num_workers=2, placement_strategy="SPREAD"),
    ):
        assert shape_of(other) != shape_of(base), other


def test_a_trial_resumes_from_the_checkpoint_it_recorded_last(tmp_path: Path):
    run_dir = str(tmp_path / "sweep-trial1")
    assert last_checkpoint(run_dir) is None  # nothing recorded: a fresh start
    first, second = tmp_path / "group" / "checkpoint_0", tmp_path / "group" / "checkpoint_1"
    first.mkdir(parents=True), second.mkdir()
    remember_checkpoint(run_dir, Checkpoint(str(first)))
    remember_checkpoint(run_dir, Checkpoint(str(second)))
    assert last_checkpoint(run_dir).path == str(second)


def test_a_recorded_checkpoint_that_is_gone_is_not_resumed_from(tmp_path: Path):
    run_dir = str(tmp_path / "sweep-trial1")
    remember_checkpoint(run_dir, Checkpoint(str(tmp_path / "deleted")))
    assert last_checkpoint(run_dir) is None
