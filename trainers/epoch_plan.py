"""How a worker group's epochs divide into steps: the batch, the warm-up after every start, the profiled window."""

from __future__ import annotations

from dataclasses import dataclass

from raysweep.core.params import TrialParams
from trainers.data.datasets import ImageData
from trainers.measure.warmup import WarmupPlan

# The profiled window takes only steps beyond this many timed ones of the last epoch (fewer timed
# steps than this are flagged by the analysis as too few to trust).
MIN_TIMED_STEPS = 5


@dataclass
class EpochPlan:
    samples_per_epoch: int
    steps_per_epoch: int
    micro_batch: int
    accum: int
    global_batch: int
    warmup: WarmupPlan
    profile_steps: int  # profiled after the timed steps of the last epoch (0 for one rank: no collectives)
    last_epoch: int

    def profiled_steps(self, epoch: int) -> int:
        """The last steps of the last epoch, run under the profiler, after MIN_TIMED_STEPS timed ones."""
        if epoch != self.last_epoch:
            return 0
        timed = self.steps_per_epoch - self.warmup.untimed_steps(epoch)
        return max(0, min(self.profile_steps, timed - MIN_TIMED_STEPS))

    @classmethod
    def of(cls, params: TrialParams, data: ImageData, start_epoch: int) -> EpochPlan:
        """The plan of a worker group that starts training at ``start_epoch`` (after a restart: > 0)."""
        gb = params.train_batch_size
        steps = params.steps_per_epoch(0 if params.train_samples else data.num_train)  # the split, read only if used
        # A slowed rank sizes its delay on at least one untimed step (trainers.measure.straggler).
        warmup_steps = max(params.warmup_steps, 1 if params.slow_rank_list else 0)
        warmup = WarmupPlan.after_start(warmup_steps, start_epoch, steps, params.epochs)
        profile_steps = params.profile_steps if params.num_workers > 1 else 0
        return cls(
            steps * gb,
            steps,
            params.effective_micro_batch,
            params.grad_accum_steps,
            gb,
            warmup,
            profile_steps,
            params.epochs - 1,
        )
