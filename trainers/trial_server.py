"""A worker of a shared worker group: it trains the trials its group hands it, one after another.

What outlives a trial is the process: its imports (torch, timm, DeepSpeed), its device context
and the process group Ray Train set up, which together cost most of a trial's start-up.
Nothing a trial builds survives it: model, engine, optimizer, data and seed are made again by
``train_trial``, compiled graphs are dropped, and the peak-memory counter starts again at what
the process holds between trials.  The group (``raysweep.worker_groups.TrialGroup``) is an
actor handle in ``config``; its replies are plain values, so nothing here imports it.

A group's process is new when its first trial comes: it has been importing the trials' code, timm
and DeepSpeed on a thread since the process started (``trainers.trial_code``).  Paying the device's
one-time costs (NCCL's communicator, cuBLAS and cuDNN handles, first kernel launches) on another thread
meanwhile was measured on an H200 and did not pay (``docs/results/h200-device-warm/``).
"""

from __future__ import annotations

import itertools

import ray
import ray.train
import ray.train.torch
import torch

from trainers.hardware import reset_peak_memory
from trainers.trial_code import trial_code


def serve_trials_per_worker(config: dict) -> None:
    """Ray Train's loop of a shared group: train each trial the group hands out until it says stop."""
    group = config["group"]
    device = ray.train.torch.get_device()
    code = trial_code()  # imports started with the process (trainers.trial_code)
    for index in itertools.count():
        trial = next_trial(group, index)
        if trial is None:
            return
        train_trial = code.result()
        start_clean(device)
        train_trial(trial, trial["resume_from"])


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
