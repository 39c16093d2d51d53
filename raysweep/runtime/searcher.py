"""Hands trials to Tune only when their ranks fit in what the cluster has free.

Tune cannot see a trial's workers (the Train run reserves them itself, after the trial has
started), so left alone it would start every trial at once and let their placement groups
queue.  This searcher keeps Tune's view honest: it releases the next pending trial that fits
in the free capacity (the first in order, or a later, smaller one, so no device idles while
something pending would fit) and never more than ``max_concurrent`` at once.
"""

from __future__ import annotations

import dataclasses
import pickle
from collections import Counter
from collections.abc import Callable

from ray.tune.search import Searcher

from raysweep.core.params import TrialParams
from raysweep.core.spec import SPEC_KEY, TrialSpec
from raysweep.runtime.capacity import Capacity, Demand


class FitSearcher(Searcher):
    def __init__(
        self,
        trials: list[TrialParams],
        capacity: Capacity,
        base_spec: TrialSpec,
        max_concurrent: int = 0,
        finished_params: Callable[[], list[str]] = list,
    ):
        super().__init__()
        self.finished_params = finished_params
        self.pending = list(enumerate(trials))
        self.capacity = capacity
        self.base_spec = base_spec  # every trial's spec but its index and parameters
        self.max_concurrent = max_concurrent
        self.running: dict[str, tuple[Demand, list[str]]] = {}

    def suggest(self, trial_id: str) -> dict | str | None:
        if not self.pending:
            return Searcher.FINISHED
        if self.max_concurrent and len(self.running) >= self.max_concurrent:
            return None
        for position, (index, params) in enumerate(self.pending):
            demand = Demand.of(params)
            placed = self.capacity.reserve(demand)
            if placed is not None:
                del self.pending[position]
                self.running[trial_id] = (demand, placed)
                # Tune's config must be a dict: one key holds the typed spec
                return {SPEC_KEY: dataclasses.replace(self.base_spec, index=index, params=params)}
        return None

    def get_state(self) -> dict:
        """What a restarted sweep needs: the trials not yet started, and what each running one holds."""
        return {"pending": self.pending, "running": {t: demand for t, (demand, _) in self.running.items()}}

    def set_state(self, state: dict) -> None:
        """Continue from ``get_state`` on ``self.capacity``, the cluster there is now (node ids may differ).

        Trials that were running are re-run by Tune itself, so they hold a reservation again; a
        pending trial whose configuration already has a finished row (it finished after Tune's
        last experiment checkpoint) is not run again.
        """
        self.running = {}
        for trial_id, demand in state["running"].items():
            placed = self.capacity.reserve(demand)
            if placed is not None:
                self.running[trial_id] = (demand, placed)
        self.pending = drop_finished(state["pending"], self.finished_params)

    def save(self, checkpoint_path: str) -> None:
        with open(checkpoint_path, "wb") as f:
            pickle.dump(self.get_state(), f)

    def restore(self, checkpoint_path: str) -> None:
        with open(checkpoint_path, "rb") as f:
            state = pickle.load(f)
        self.capacity = Capacity.of_cluster()
        self.set_state(state)

    def on_trial_complete(self, trial_id: str, result: dict | None = None, error: bool = False) -> None:
        if trial_id in self.running:
            self.capacity.release(*self.running.pop(trial_id))


def drop_finished(pending: list[tuple[int, TrialParams]], finished: Callable[[], list[str]]) -> list:
    """Pending trials less those whose parameters (``params_json``) already have a finished row."""
    done = Counter(finished())
    kept = []
    for index, params in pending:
        key = params.key()
        if done[key]:
            done[key] -= 1
        else:
            kept.append((index, params))
    return kept
