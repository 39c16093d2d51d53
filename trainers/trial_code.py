"""A rank's imports of the trials' code (timm, DeepSpeed, ``train_trial``) on a thread, from its process's start.

A Train worker's process starts, connects to Ray, becomes Ray Train's worker actor, joins the run's
process group (importing torch) and only then runs the training function: seconds in which the
process would otherwise import nothing.  Ray runs the job's setup hook (``trainers.worker_start``)
in every worker process right after it connects; in a rank's process (its environment has
``RANK_ENV_VAR``, set by ``raysweep.train_run``) the hook starts these imports there, and the
training function takes them over (``trial_code``).

Nothing imported here touches the device: Ray sets a rank's ``CUDA_VISIBLE_DEVICES`` when the actor is
created and Ray Train changes it when the group starts, both after the hook, and CUDA reads it once,
when it initialises (``tests/test_trial_code.py`` pins that the imports never do).
"""

from __future__ import annotations

import threading
from collections.abc import Callable
from concurrent.futures import Future

# Set in a Train worker's environment by raysweep.train_run: the process is a rank that will train trials.
RANK_ENV_VAR = "RAYSWEEP_RANK"

_started: Future | None = None


def start_at_process_start() -> None:
    """Start the imports now; the process's first ``trial_code()`` takes them over."""
    global _started
    if _started is None:
        _started = import_in_background()


def trial_code() -> Future[Callable[..., None]]:
    """``train_trial`` on a future: the imports started with the process, or new ones.

    ``result()`` gives ``trainers.train_loop.train_trial`` or raises what the import raised, where a
    trial needs the code; a group stopped before its first trial never waits for them.
    """
    global _started
    code, _started = _started or import_in_background(), None
    return code


def import_in_background() -> Future[Callable[..., None]]:
    imported: Future = Future()

    def load() -> None:
        try:
            import deepspeed  # noqa: F401
            import timm  # noqa: F401

            from trainers.train_loop import train_trial

            imported.set_result(train_trial)
        except BaseException as e:
            imported.set_exception(e)

    threading.Thread(target=load, name="import-trial-code", daemon=True).start()
    return imported
