"""A group's rank imports the trials' code on a thread while it waits for its first trial, and keeps
what its imports made out of the garbage collections between and during trials."""

import gc
import sys
import weakref

import pytest
import torch

from trainers.trial_server import freeze_startup_objects, import_trial_code_in_background, start_clean


def test_it_hands_over_the_training_function():
    from trainers.train_loop import train_trial

    assert import_trial_code_in_background().result() is train_trial


def test_an_import_that_fails_is_raised_where_the_trial_asks_for_the_code(monkeypatch):
    monkeypatch.setitem(sys.modules, "timm", None)  # makes ``import timm`` raise ImportError
    code = import_trial_code_in_background()
    with pytest.raises(ImportError):
        code.result()


@pytest.fixture
def unfrozen_after():
    yield
    gc.unfreeze()


def test_what_the_process_holds_before_its_first_trial_is_left_out_of_collections(unfrozen_after):
    before = gc.get_freeze_count()
    freeze_startup_objects()
    assert gc.get_freeze_count() > before


def test_a_trial_made_after_the_freeze_is_still_freed_by_the_next_trials_clean_start(unfrozen_after):
    freeze_startup_objects()

    class Model:  # a trial's model in a reference cycle, as engines and hooked modules are
        def __init__(self):
            self.me = self
            self.weights = torch.zeros(1024)

    trial_model = weakref.ref(Model())
    assert trial_model() is not None  # held by its cycle only
    start_clean(torch.device("cpu"))
    assert trial_model() is None
