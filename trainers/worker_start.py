"""What every worker process of a sweep does as it starts: Ray's ``worker_process_setup_hook``.

Set for the whole job in ``raysweep.cluster.project_runtime_env``; Ray runs it in each worker process
right after the process connects, before any task or actor of it runs, so it must return at once.
"""

from __future__ import annotations

import os

from trainers.quiet import quiet_worker
from trainers.trial_code import RANK_ENV_VAR, start_at_process_start


def on_worker_start() -> None:
    """Quiet the process's noise; in a rank's process, start importing the trials' code (``trainers.trial_code``)."""
    quiet_worker()
    if os.environ.get(RANK_ENV_VAR):
        start_at_process_start()
