"""OptunaFitSearcher without a cluster: one study per grid point over that point's own ranges, each starting
from its baseline (the scaling rule's learning rate, the default warm-up), then Optuna's proposals."""

from __future__ import annotations

import pytest

from raysweep.core.params import TrialParams
from raysweep.core.spec import SPEC_KEY
from raysweep.planning.space import load_space
from raysweep.runtime.capacity import Capacity
from raysweep.runtime.optuna_searcher import OptunaFitSearcher, baseline
from tests.specs import trial_spec


def params_of(suggestion) -> TrialParams:
    assert isinstance(suggestion, dict), suggestion
    return suggestion[SPEC_KEY].params


def test_the_baseline_is_the_rule_and_the_defaults_where_the_ranges_hold_them():
    template = TrialParams(micro_batch_per_worker=64, lr=0.003, lr_warmup=0.2)  # a template's own draw
    axes = {"lr": {"loguniform": [5e-5, 5e-3]}, "lr_warmup": {"uniform": [0.0, 0.3]}}
    assert baseline(template, axes) == {"lr": pytest.approx(1e-3 * (64 / 256) ** 0.5), "lr_warmup": 0.05}
    assert baseline(template, {"lr": {"loguniform": [1e-2, 1e-1]}}) == {}  # the rule lies outside: Optuna picks
    assert baseline(template, {"zero_stage": {"choice": [1, 2]}}) == {}


def test_each_batch_sizes_study_starts_at_its_rule_then_searches_its_own_range():
    space = load_space("tuned_batch")
    fixed_epochs = (t for t in space.expand() if t.repeat == 0 and t.max_steps_per_epoch == 0)
    first_round = sorted(fixed_epochs, key=lambda t: t.micro_batch_per_worker)
    templates = first_round[:2]  # micro batch 16 and 32
    axes = [space.distributions_of(t) for t in templates]
    searcher = OptunaFitSearcher(
        templates, axes, 3, "val_accuracy", "max", Capacity({"node": {"CPU": 64.0, "GPU": 0.0}}), trial_spec(index=-1)
    )
    proposed = [params_of(searcher.suggest(f"t{i}")) for i in range(6)]
    assert [p.micro_batch_per_worker for p in proposed] == [16, 16, 16, 32, 32, 32]
    for study, template in enumerate(templates):
        first, *rest = proposed[3 * study : 3 * study + 3]
        rule = TrialParams(micro_batch_per_worker=template.micro_batch_per_worker).learning_rate
        assert (first.lr, first.lr_warmup) == (pytest.approx(rule), 0.05)
        for p in rest:
            assert rule / 10 <= p.lr <= rule * 10 and 0.0 <= p.lr_warmup <= 0.3
            assert p.lr != pytest.approx(rule)


def test_the_studies_live_in_the_sweeps_storage_and_a_restored_searcher_keeps_them(tmp_path):
    import optuna

    space = load_space("tuned_batch")
    fixed_epochs = (t for t in space.expand() if t.repeat == 0 and t.max_steps_per_epoch == 0)
    first_round = sorted(fixed_epochs, key=lambda t: t.micro_batch_per_worker)
    templates = first_round[:2]
    axes = [space.distributions_of(t) for t in templates]
    storage = f"sqlite:///{tmp_path / 'optuna.db'}"

    def searcher():
        capacity = Capacity({"node": {"CPU": 64.0, "GPU": 0.0}})
        return OptunaFitSearcher(
            templates, axes, 2, "val_accuracy", "max", capacity, trial_spec(index=-1), storage=storage
        )

    first = searcher()
    first.suggest("t0")
    first.on_trial_complete("t0", {"val_accuracy": 0.8, "training_iteration": 1})
    state = first.get_state()
    names = sorted(s.study_name for s in optuna.get_all_study_summaries(storage))
    assert names == ["point0-w1-mb16-acc1-repeat0", "point1-w1-mb32-acc1-repeat0"]
    told = optuna.load_study(study_name=names[0], storage=storage)
    assert [t.value for t in told.trials if t.state == optuna.trial.TrialState.COMPLETE] == [0.8]

    again = searcher()  # as --resume builds it, then restores the saved state
    again.set_state(state)
    again.suggest("t1")
    again.on_trial_complete("t1", {"val_accuracy": 0.9, "training_iteration": 1})
    study = optuna.load_study(study_name=names[0], storage=storage)
    assert sorted(t.value for t in study.trials if t.state == optuna.trial.TrialState.COMPLETE) == [0.8, 0.9]
    assert study.best_value == 0.9
