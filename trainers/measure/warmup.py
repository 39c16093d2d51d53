"""Which optimizer steps are left out of the timing: the first ones after every worker-group start.

A started (or restarted) process compiles, autotunes and allocates in its first steps, whichever
epoch it starts at, so the warm-up counts the steps this process has run, not the trial's global
steps. At least one step of the process stays timed, whatever ``warmup_steps`` asks for.
"""

from __future__ import annotations

from dataclasses import dataclass


@dataclass(frozen=True)
class WarmupPlan:
    start_epoch: int  # the first epoch this process trains (after a restart: the one after the checkpoint)
    steps_per_epoch: int
    warmup_steps: int  # untimed steps from the start, already capped to keep one timed step

    @classmethod
    def after_start(cls, warmup_steps: int, start_epoch: int, steps_per_epoch: int, epochs: int) -> WarmupPlan:
        steps_left = (epochs - start_epoch) * steps_per_epoch
        return cls(start_epoch, steps_per_epoch, max(0, min(warmup_steps, steps_left - 1)))

    def untimed_steps(self, epoch: int) -> int:
        """Steps at the start of ``epoch`` that are warm-up (0 once the warm-up is over)."""
        done_before = (epoch - self.start_epoch) * self.steps_per_epoch
        return min(self.steps_per_epoch, max(0, self.warmup_steps - done_before))
