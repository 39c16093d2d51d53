"""A group's rank imports the trials' code on a thread while it waits for its first trial."""

import sys

import pytest

from trainers.trial_server import import_trial_code_in_background


def test_it_hands_over_the_training_function():
    from trainers.train_loop import train_trial

    assert import_trial_code_in_background().result() is train_trial


def test_an_import_that_fails_is_raised_where_the_trial_asks_for_the_code(monkeypatch):
    monkeypatch.setitem(sys.modules, "timm", None)  # makes ``import timm`` raise ImportError
    code = import_trial_code_in_background()
    with pytest.raises(ImportError):
        code.result()
