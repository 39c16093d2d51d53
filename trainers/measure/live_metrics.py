"""Live per-trial metrics on Ray's Prometheus endpoint, updated once per epoch by every rank.

Each Train worker owns its gauges (created on its first epoch, never on import): samples/s and
epoch from rank 0, whose figures are the whole group's, and step time and peak memory from every
rank.  Ray's metrics agent on the worker's node exports them with the prefix ``ray_``, tagged with
the sweep and trial (and rank), so a dashboard can chart a sweep while it runs.  Publishing is
best effort: a metrics problem must never fail a trial.
"""

from __future__ import annotations

import statistics
import sys

from trainers.measure.meter import TrialMeter

TRIAL_TAGS = ("sweep", "trial_id")
RANK_TAGS = ("sweep", "trial_id", "rank")


class LiveMetrics:
    """The gauges and counter of one rank's process, tagged per trial (a shared worker runs several)."""

    def __init__(self):
        from ray.util.metrics import Counter, Gauge

        self.samples_per_s = Gauge(
            "raysweep_trial_samples_per_second", "Global training samples/s of the last epoch", TRIAL_TAGS
        )
        self.epoch = Gauge("raysweep_trial_epoch", "Epochs finished", TRIAL_TAGS)
        self.samples = Counter("raysweep_trial_samples", "Global training samples processed (timed steps)", TRIAL_TAGS)
        self.step_ms = Gauge(
            "raysweep_trial_step_time_ms", "Mean optimizer step time of the last epoch on this rank", RANK_TAGS
        )
        self.peak_mem = Gauge(
            "raysweep_trial_peak_memory_gib", "Peak memory of this rank so far (GPU allocated or CPU RSS)", RANK_TAGS
        )

    def update(self, meter: TrialMeter, peak_mem_gib: float, rank: int, sweep: str, trial_id: str) -> None:
        trial = {"sweep": sweep, "trial_id": trial_id}
        ranked = {**trial, "rank": str(rank)}
        last = meter.epochs[-1]
        if last.step_ms:
            self.step_ms.set(statistics.fmean(last.step_ms), tags=ranked)
        self.peak_mem.set(peak_mem_gib, tags=ranked)
        if rank == 0:
            if last.timed_s > 0:
                self.samples_per_s.set(last.timed_samples / last.timed_s, tags=trial)
            if last.timed_samples:
                self.samples.inc(last.timed_samples, tags=trial)
            self.epoch.set(last.epoch + 1, tags=trial)


_live: LiveMetrics | None = None
_disabled = False


def publish_epoch(meter: TrialMeter, rank: int, peak_mem_gib: float, sweep: str, trial_id: str) -> None:
    """Export this rank's figures for the epoch just finished; cheap, and once per epoch only."""
    global _live, _disabled
    if _disabled:
        return
    try:
        if _live is None:
            _live = LiveMetrics()
        _live.update(meter, peak_mem_gib, rank, sweep, trial_id)
    except Exception as e:  # monitoring is optional; the trial's own results still go to Tune
        _disabled = True
        print(f"raysweep: live metrics disabled on rank {rank}: {e}", file=sys.stderr, flush=True)
