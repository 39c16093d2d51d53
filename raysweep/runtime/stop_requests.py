"""A trial's driver asks the sweep to stop: a file of the dataset cannot be read, and every trial would meet it.

Tune knows a trial's end only as completed or errored, and an errored trial stays errored on ``--resume``;
a trial cut off by the sweep's stop runs again.  So the driver that meets a ``DataFileError`` does not
raise it: it posts it here and waits, and the sweep's process (``raysweep.data_stop``, a Tune callback
that reads the posts) records the trial as failed and stops Tune as Ctrl-C does: the trials not yet
started stay pending, the trial cut off runs again on ``--resume``.

The posts are held by a named actor that the first driver to post starts (none runs in a sweep without
a data error); it lives as long as that driver's process, which outlasts the sweep's reading of it.
"""

from __future__ import annotations

import time

import ray

from raysweep.core.errors import DataFileError
from raysweep.runtime.early_stop import tune_stopped

# How long a driver that posted waits for the sweep to stop it; a run that nobody reads the posts of (the
# max-batch search's probes) then fails the trial with the error, as any error would.
WAIT_S = 20.0
POLL_S = 0.2


def mailbox_name(sweep: str) -> str:
    return f"raysweep-stop-requests-{sweep}"


@ray.remote(num_cpus=0)
class StopRequests:
    """The data errors the sweep's drivers posted, in order, each with its trial."""

    def __init__(self):
        self.posted: list[tuple[str, DataFileError]] = []

    def post(self, trial_id: str, error: DataFileError) -> None:
        self.posted.append((trial_id, error))

    def read(self, seen: int) -> list[tuple[str, DataFileError]]:
        """The posts after the first ``seen``."""
        return self.posted[seen:]


def stop_for(sweep: str, trial_id: str, error: DataFileError) -> bool:
    """Post ``error`` for the sweep's process, then wait for Tune to stop this trial; whether it did."""
    mailbox = StopRequests.options(name=mailbox_name(sweep), get_if_exists=True).remote()
    ray.get(mailbox.post.remote(trial_id, error))
    deadline = time.monotonic() + WAIT_S
    while time.monotonic() < deadline:
        if tune_stopped():
            return True
        time.sleep(POLL_S)
    return False


def posted(sweep: str, seen: int) -> list[tuple[str, DataFileError]]:
    """The sweep's posts after the first ``seen`` (none while no driver has posted)."""
    try:
        mailbox = ray.get_actor(mailbox_name(sweep))
    except ValueError:  # no driver has posted
        return []
    return ray.get(mailbox.read.remote(seen))
