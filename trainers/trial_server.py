"""A worker of a shared worker group: it trains the trials its group hands it, one after another.

What outlives a trial is the process: its imports (torch, timm, DeepSpeed), its device context
and the process group Ray Train set up, which together cost most of a trial's start-up.
Nothing a trial builds survives it: model, engine, optimizer, data and seed are made again by
``train_trial``, compiled graphs are dropped, and the peak-memory counter starts again at what
the process holds between trials.  The group (``raysweep.worker_groups.TrialGroup``) is an
actor handle in ``config``; its replies are plain values, so nothing here imports it.

A group's process is new when its first trial comes: the device's one-time costs
(``trainers.device_warmup``) are paid on a thread while the trials' code, timm and DeepSpeed are
imported, before the first trial is asked for, so that neither waits for the other.
"""

from __future__ import annotations

import itertools
from collections.abc import Callable

import ray
import ray.train
import ray.train.torch
import torch

from trainers.device_warmup import warm_device_in_background
from trainers.hardware import reset_peak_memory


def serve_trials_per_worker(config: dict) -> None:
    """Ray Train's loop of a shared group: train each trial the group hands out until it says stop."""
    group = config["group"]
    device = ray.train.torch.get_device()
    warming = warm_device_in_background(device)
    train_trial = import_trial_code()
    if warming is not None:
        warming.join()  # its collective comes before any of the trials'
    for index in itertools.count():
        trial = next_trial(group, index)
        if trial is None:
            return
        start_clean(device)
        train_trial(trial, trial["resume_from"])


def import_trial_code() -> Callable[[dict, ray.train.Checkpoint | None], None]:
    """``train_trial``, with timm and DeepSpeed, which every trial's model and engine import on first use."""
    import deepspeed  # noqa: F401
    import timm  # noqa: F401

    from trainers.train_loop import train_trial

    return train_trial


def next_trial(group, index: int) -> dict | None:
    """The group's trial number ``index`` (every rank asks for the same one), or None once it stops."""
    while True:
        reply = ray.get(group.next_trial.remote(index))
        if reply.get("stop"):
            return None
        if "trial" in reply:
            return reply["trial"]


def start_clean(device: torch.device) -> None:
    """What one trial left in this process must not reach the next one's figures."""
    torch._dynamo.reset()  # compiled graphs, and their cache limit, belong to the last trial's model
    reset_peak_memory(device)
