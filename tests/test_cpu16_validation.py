"""The committed 16-core validation is the current model's: predicting again from the trials and the probe it
measured (``docs/results/cpu16-prediction/measured/``) gives the committed summary, so a change to the model
that moves its errors shows up here and in the docs it renders."""

from __future__ import annotations

import importlib.util
import sys

import pandas as pd

from tests.integration.conftest import REPO

EXPERIMENT = REPO / "docs" / "results" / "cpu16-prediction"


def load_validate():
    spec = importlib.util.spec_from_file_location("cpu16_validate", EXPERIMENT / "validate.py")
    module = importlib.util.module_from_spec(spec)
    sys.modules[spec.name] = module  # its dataclasses look their module up by name
    spec.loader.exec_module(module)
    return module


def test_the_committed_summary_is_what_the_model_predicts_from_the_committed_measurements(tmp_path):
    validate = load_validate()
    assert validate.main(["--from", str(EXPERIMENT / "measured"), str(tmp_path)]) == 0
    committed = pd.read_csv(EXPERIMENT / "summary.csv")
    again = pd.read_csv(tmp_path / "summary.csv")
    assert set(committed["run"]) == set(validate.CASES)
    pd.testing.assert_frame_equal(again, committed)
