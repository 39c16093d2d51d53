"""A trial that Tune's scheduler stops: how its driver learns it, and the time Tune gives it to end.

Tune stops a function trainable by setting its session's stop event; the driver's next
``ray.tune.report`` then raises ``SystemExit``.  A driver that follows a shared worker group waits
between reports, so it also looks at the event itself (``tune_stopped``), tells the group to end the
trial after the epoch in flight, and hands the group back to the pool before it exits.
"""

from __future__ import annotations

# Tune waits this long for a stopped trial's thread before it gives up reusing the trial's actor
# (its default, 2 s, is about one wait for the group's news: the driver's hand-back would be cut off).
STOP_GRACE_S = 30


def early_stop_env() -> dict[str, str]:
    """Environment of the cluster's processes (the trial actors read it when Tune stops a trial)."""
    return {"TUNE_FUNCTION_THREAD_TIMEOUT_S": str(STOP_GRACE_S)}


def tune_stopped() -> bool:
    """Tune has stopped the trial this thread runs (its scheduler's decision, or the sweep's end)."""
    from ray.train._internal.session import get_session

    session = get_session()
    return session is not None and session.stop_event.is_set()
