"""Tiny real trial specs for tests of what reads a Tune trial's config."""

from __future__ import annotations

from raysweep.core.params import TrialParams
from raysweep.core.spec import SPEC_KEY, TrialSpec


def trial_spec(params: TrialParams | None = None, index: int = 0) -> TrialSpec:
    return TrialSpec(
        sweep="s",
        sweep_dir="/tmp/raysweep-test/s",
        storage_path="/tmp/raysweep-test/s/_ray",
        collective_timeout_s=60,
        max_failures=0,
        share_workers=True,
        index=index,
        params=params or TrialParams(),
    )


def tune_config(params: TrialParams) -> dict:
    """A Tune trial's ``config``, as the searcher hands it."""
    return {SPEC_KEY: trial_spec(params)}
