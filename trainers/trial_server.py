"""A worker of a shared worker group: it trains the trials its group hands it, one after another.

What outlives a trial is the process: its imports (torch, timm, DeepSpeed), its device context
and the process group Ray Train set up, which together cost most of a trial's start-up.
Nothing a trial builds survives it: model, engine, optimizer, data and seed are made again by
``train_trial``, which closes its engine at the end (releasing what DeepSpeed's ZeRO keeps reachable),
what it changed process-wide is put back (``trainers.process_state``), compiled graphs are dropped,
and the peak-memory counter starts again at what the process holds between trials.  The group
(``raysweep.runtime.worker_groups.TrialGroup``) is an actor handle in ``config``; its replies are
``NextTrial`` values, so nothing here imports it.

A group's process is new when its first trial comes: while it waits for it, it imports the trials'
code, timm and DeepSpeed on a thread (``import_trial_code_in_background``).  The device's one-time
costs (NCCL's communicator, cuBLAS and cuDNN handles, first kernel launches) are not paid on another
thread meanwhile: the imports beside such a thread slowed down by as much as it saved
(docs/performance.md, trial overhead).
"""

from __future__ import annotations

import dataclasses
import gc
import itertools
import threading
from collections.abc import Callable
from concurrent.futures import Future

import ray
import ray.train
import ray.train.torch
import torch

from raysweep.core.spec import NextTrial, RankTrial
from trainers.measure.hardware import reset_peak_memory
from trainers.process_state import ProcessState


def serve_trials_per_worker(config: dict) -> None:
    """Ray Train's loop of a shared group: train each trial the group hands out until it says stop."""
    group = config["group"]
    device = ray.train.torch.get_device()
    code = import_trial_code_in_background()
    for index in itertools.count():
        trial = next_trial(group, index)
        if trial is None:
            return
        train_trial = code.result()
        if index == 0:
            freeze_startup_objects()
        start_clean(device)
        process = ProcessState.capture()
        train_trial(dataclasses.replace(trial, stop_requested=stop_check(group, trial.trial_id)))
        # What the trial changed for the whole process (DeepSpeed ZeRO-3's linear, torch's math flags,
        # global module hooks) would otherwise reach every later trial of the group, whatever its engine.
        process.restore()


def stop_check(group, trial_id: str) -> Callable[[], bool]:
    """Whether Tune has stopped the trial (its driver told the group): asked after each epoch's report."""
    return lambda: ray.get(group.trial_stopped.remote(trial_id))


def import_trial_code_in_background() -> Future[Callable[[RankTrial], None]]:
    """``train_trial`` and what every trial's model and engine import on first use (timm, DeepSpeed),
    imported on a thread from the rank's start while it waits for its first trial; ``result()`` gives
    ``train_trial`` or raises what the import raised, where a trial needs the code.

    A group stopped before its first trial (the sweep's input refused while its workers started)
    returns without waiting for these imports.
    """
    imported: Future = Future()

    def load() -> None:
        try:
            from trainers.engines.deepspeed import import_deepspeed

            import_deepspeed()
            import timm  # noqa: F401

            from trainers.train_loop import train_trial

            imported.set_result(train_trial)
        except BaseException as e:
            imported.set_exception(e)

    threading.Thread(target=load, name="import-trial-code", daemon=True).start()
    return imported


def next_trial(group, index: int) -> RankTrial | None:
    """The group's trial number ``index`` (every rank asks for the same one), or None once it stops."""
    while True:
        reply: NextTrial = ray.get(group.next_trial.remote(index))
        if reply.stop:
            return None
        if reply.trial is not None:
            return reply.trial


def freeze_startup_objects() -> None:
    """Leave what the process made before its first trial out of every later garbage collection.

    The imports (torch, timm, DeepSpeed, Ray) leave about half a million objects that a full collection
    walks each time: at each trial's start (``start_clean``) and in every automatic full collection while
    a trial trains.  Frozen before the first trial, so that nothing a trial makes is frozen: collections
    still free every trial's model and engine.  Not collected first: that walk would cost the first trial
    what freezing saves the later ones, and the imports leave almost no garbage.
    """
    gc.freeze()


def start_clean(device: torch.device) -> None:
    """What one trial left in this process must not reach the next one's figures."""
    torch._dynamo.reset()  # compiled graphs, and their cache limit, belong to the last trial's model
    reset_peak_memory(device)
