"""FitSearcher: hands Tune the next pending trial whose ranks fit in the free capacity (no Ray started)."""

from __future__ import annotations

import copy
import dataclasses
import pickle

import pytest
from ray.tune.search import Searcher

from raysweep.core.params import TrialParams
from raysweep.core.spec import SPEC_KEY
from raysweep.runtime.capacity import Capacity
from raysweep.runtime.searcher import FitSearcher
from tests.specs import trial_spec

BASE = trial_spec(index=-1)


def cpu_trial(workers: int, **kw) -> TrialParams:
    return TrialParams(num_workers=workers, device="cpu", precision="fp32", **kw)


def gpu_trial(workers: int) -> TrialParams:
    return TrialParams(num_workers=workers, device="gpu", precision="bf16")


def searcher(trials, cpus=4.0, gpus=0.0, max_concurrent=0) -> FitSearcher:
    return FitSearcher(trials, Capacity({"node": {"CPU": cpus, "GPU": gpus}}), BASE, max_concurrent)


def index_of(suggestion) -> int:
    assert isinstance(suggestion, dict), f"expected a trial config, got {suggestion!r}"
    return suggestion[SPEC_KEY].index


def test_suggestion_is_the_base_spec_with_the_index_and_the_params_under_one_key():
    trials = [cpu_trial(1, micro_batch_per_worker=16), cpu_trial(1, micro_batch_per_worker=64)]
    s = searcher(trials)
    config = s.suggest("t0")
    assert config == {SPEC_KEY: dataclasses.replace(BASE, index=0, params=trials[0])}
    assert pickle.loads(pickle.dumps(config)) == config  # Tune pickles a trial's config with the experiment


def test_trials_are_handed_out_in_order_while_they_fit_then_finished():
    trials = [cpu_trial(1) for _ in range(3)]
    s = searcher(trials, cpus=4.0)
    assert [index_of(s.suggest(f"t{i}")) for i in range(3)] == [0, 1, 2]
    assert s.suggest("t3") == Searcher.FINISHED
    assert s.suggest("t4") == Searcher.FINISHED


def test_waits_with_none_when_nothing_pending_fits():
    s = searcher([cpu_trial(1), cpu_trial(1)], cpus=2.0)
    assert index_of(s.suggest("a")) == 0
    before = copy.deepcopy(s.capacity.nodes)
    assert s.suggest("b") is None  # 2 - 1 - driver share < 1 CPU
    assert s.capacity.nodes == before  # waiting reserves nothing
    assert len(s.pending) == 1


def test_backfills_a_later_smaller_trial_when_the_head_does_not_fit():
    trials = [gpu_trial(2), gpu_trial(4), gpu_trial(1), gpu_trial(1)]
    s = searcher(trials, cpus=64.0, gpus=4.0)
    assert index_of(s.suggest("a")) == 0
    assert index_of(s.suggest("b")) == 2  # the 4-GPU trial waits; a 1-GPU trial uses an idle GPU
    assert index_of(s.suggest("c")) == 3
    assert s.capacity.nodes["node"]["GPU"] == 0  # no GPU idles while something pending fits
    assert s.suggest("d") is None
    assert [i for i, _ in s.pending] == [1]


def test_finishing_trials_frees_capacity_so_the_big_pending_trial_starts():
    trials = [gpu_trial(2), gpu_trial(4), gpu_trial(1)]
    s = searcher(trials, cpus=64.0, gpus=4.0)
    s.suggest("a"), s.suggest("c")  # trials 0 and 2 run, trial 1 needs all four GPUs
    assert s.suggest("x") is None
    s.on_trial_complete("a", result={"throughput": 1.0})
    assert s.suggest("x") is None  # three GPUs free: still not enough
    s.on_trial_complete("c", error=True)  # a failed trial releases its GPUs too
    assert index_of(s.suggest("x")) == 1
    assert s.suggest("y") == Searcher.FINISHED


@pytest.mark.parametrize("error", [False, True])
def test_on_trial_complete_restores_the_capacity_exactly(error):
    s = searcher([cpu_trial(2, cpus_per_worker=1.5)], cpus=8.0)
    before = copy.deepcopy(s.capacity.nodes)
    s.suggest("a")
    assert s.capacity.nodes["node"]["CPU"] < before["node"]["CPU"]
    s.on_trial_complete("a", error=error)
    assert s.capacity.nodes == before
    assert s.running == {}


def test_completing_an_unknown_or_already_completed_trial_changes_nothing():
    s = searcher([cpu_trial(1)], cpus=4.0)
    s.suggest("a")
    s.on_trial_complete("a")
    after = copy.deepcopy(s.capacity.nodes)
    s.on_trial_complete("a")
    s.on_trial_complete("never-suggested")
    assert s.capacity.nodes == after


def test_max_concurrent_caps_running_trials_even_with_room():
    s = searcher([cpu_trial(1) for _ in range(4)], cpus=16.0, max_concurrent=2)
    assert index_of(s.suggest("a")) == 0
    assert index_of(s.suggest("b")) == 1
    assert s.suggest("c") is None
    s.on_trial_complete("a")
    assert index_of(s.suggest("c")) == 2
    assert s.suggest("d") is None


def test_zero_max_concurrent_means_as_many_as_fit():
    s = searcher([cpu_trial(1) for _ in range(5)], cpus=16.0, max_concurrent=0)
    assert [index_of(s.suggest(str(i))) for i in range(5)] == [0, 1, 2, 3, 4]


def test_whole_sweep_drains_without_deadlock():
    """Simulate Tune: ask until FINISHED, completing the oldest running trial whenever told to wait."""
    trials = [cpu_trial(n) for n in (3, 1, 2, 3, 1, 1, 2)]
    s = searcher(trials, cpus=4.0)
    started, running, asks = [], [], 0
    while True:
        asks += 1
        assert asks < 100, "scheduler never finished"
        trial_id = f"t{asks}"
        suggestion = s.suggest(trial_id)
        if suggestion == Searcher.FINISHED:
            break
        if suggestion is None:
            assert running, "waiting with nothing running would deadlock"
            s.on_trial_complete(running.pop(0))
            continue
        started.append(index_of(suggestion))
        running.append(trial_id)
    assert sorted(started) == list(range(len(trials)))
    for trial_id in running:
        s.on_trial_complete(trial_id)
    assert s.capacity.nodes == {"node": {"CPU": 4.0, "GPU": 0.0}}


def test_saved_state_restores_pending_running_and_capacity():
    """Tune checkpoints the searcher with get_state/set_state; a restored one continues where it was."""
    trials = [gpu_trial(2), gpu_trial(2), gpu_trial(1)]
    s = searcher(trials, cpus=64.0, gpus=2.0)
    s.suggest("a")
    restored = searcher(trials, cpus=64.0, gpus=2.0)
    restored.set_state(copy.deepcopy(s.get_state()))
    assert [i for i, _ in restored.pending] == [1, 2]
    assert restored.capacity.nodes == s.capacity.nodes
    assert restored.suggest("b") is None  # both GPUs are still held by "a"
    restored.on_trial_complete("a")
    assert index_of(restored.suggest("b")) == 1
