"""StudyScheduler: Tune's ASHA run per study (a trial is compared only with its own study's trials) and kept
in a file across a resume (Tune's experiment checkpoint leaves the scheduler out). No Ray cluster."""

from __future__ import annotations

import pickle
from pathlib import Path
from types import SimpleNamespace

from ray.train._internal.storage import StorageContext
from ray.tune.experiment import Trial
from ray.tune.schedulers import TrialScheduler

from raysweep.core.spec import SPEC_KEY
from raysweep.planning.search_config import SchedulerConfig, SearchConfig, build_scheduler
from raysweep.runtime.early_stop import STATE_FILE, TrialRef
from tests.specs import trial_spec

CONTROLLER = SimpleNamespace(get_live_trials=list)  # what the median rule asks of Tune's controller: none waits
ASHA = SearchConfig(search="optuna", scheduler=SchedulerConfig("asha", grace_period=1, reduction_factor=2))


def trial(index: int, sweep: Path) -> Trial:
    """A Tune trial as the scheduler sees it (a stub: no trainable registered), its spec in its config, its
    experiment ``sweep/_tune``."""
    storage = StorageContext(storage_path=sweep, experiment_dir_name="_tune")
    made = Trial("raysweep_test", config={SPEC_KEY: trial_spec(index=index)}, storage=storage, stub=True)
    made.trial_id = f"t{index}"
    return made


def epoch(scheduler, t, accuracy: float, iteration: int = 1) -> str:
    return scheduler.on_trial_result(None, t, {"training_iteration": iteration, "val_accuracy": accuracy})


def test_a_trial_is_stopped_only_against_the_trials_of_its_own_study(tmp_path):
    scheduler = build_scheduler(ASHA, trial_epochs=4, study_size=2)
    first, second, other = (trial(i, tmp_path) for i in range(3))  # study 0: trials 0 and 1; study 1: trial 2
    for t in (first, second, other):
        scheduler.on_trial_add(None, t)
    assert epoch(scheduler, first, 0.9) == TrialScheduler.CONTINUE  # the first at its rung
    assert epoch(scheduler, second, 0.5) == TrialScheduler.STOP  # below its study's first
    # far below study 0's trials, but the first of its own study: it goes on
    assert epoch(scheduler, other, 0.1) == TrialScheduler.CONTINUE


def test_the_median_rules_state_is_kept_too(tmp_path):
    median = SearchConfig(search="optuna", scheduler=SchedulerConfig("median", grace_period=1))
    scheduler = build_scheduler(median, trial_epochs=4, study_size=0)
    pickled = pickle.dumps(scheduler)
    trials = [trial(0, tmp_path), trial(1, tmp_path)]
    for t, accuracy in zip(trials, (0.9, 0.8)):
        scheduler.on_trial_add(None, t)
        scheduler.on_trial_result(CONTROLLER, t, {"training_iteration": 1, "val_accuracy": accuracy, "time_total_s": 1})
    scheduler.on_trial_complete(None, trials[0], {"training_iteration": 4, "val_accuracy": 0.9, "time_total_s": 4})
    resumed = pickle.loads(pickled)
    resumed.on_trial_add(None, trial(2, tmp_path))
    (median_rule,) = resumed.studies.values()
    # the trials from before the resume, as references: their results still make the median
    assert sorted(t.trial_id for t in median_rule._results) == ["t0", "t1"]
    assert len(median_rule._results[TrialRef("t0")]) == 2  # its epoch's result and its completion


def test_one_study_for_the_sweep_when_study_size_is_0(tmp_path):
    scheduler = build_scheduler(ASHA, trial_epochs=4, study_size=0)
    a, b = trial(0, tmp_path), trial(7, tmp_path)
    for t in (a, b):
        scheduler.on_trial_add(None, t)
    assert epoch(scheduler, a, 0.9) == TrialScheduler.CONTINUE
    assert epoch(scheduler, b, 0.1) == TrialScheduler.STOP


def test_a_resumed_scheduler_continues_from_the_state_its_run_left_wherever_the_sweep_moved(tmp_path):
    sweep = tmp_path / "sweep"
    scheduler = build_scheduler(ASHA, trial_epochs=4, study_size=0)
    pickled = pickle.dumps(scheduler)  # as Tune pickles the Tuner, before any trial
    first = trial(0, sweep)
    scheduler.on_trial_add(None, first)
    epoch(scheduler, first, 0.9)
    scheduler.on_trial_complete(None, first, {"training_iteration": 1, "val_accuracy": 0.9})
    assert (sweep / STATE_FILE).is_file()  # beside Tune's experiment directory, not in it

    moved = sweep.rename(tmp_path / "moved")
    resumed = pickle.loads(pickled)  # Tuner.restore hands back the scheduler as it was pickled: empty
    later = trial(1, moved)
    resumed.on_trial_add(None, later)
    # 0.5 is below the first trial's 0.9 at epoch 1, which only the saved state remembers
    assert epoch(resumed, later, 0.5) == TrialScheduler.STOP
    (moved / STATE_FILE).unlink()  # without the state: nothing to compare with
    fresh = pickle.loads(pickled)
    again = trial(2, moved)
    fresh.on_trial_add(None, again)
    assert epoch(fresh, again, 0.5) == TrialScheduler.CONTINUE
