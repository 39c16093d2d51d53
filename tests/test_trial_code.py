"""A rank imports the trials' code on a thread from its process's start; the training function takes it over."""

import subprocess
import sys

import pytest

from tests.integration.conftest import REPO
from trainers import trial_code as code_module
from trainers.trial_code import RANK_ENV_VAR, start_at_process_start, trial_code
from trainers.worker_start import on_worker_start


@pytest.fixture
def nothing_started(monkeypatch):
    monkeypatch.setattr(code_module, "_started", None)


def test_it_hands_over_the_training_function(nothing_started):
    from trainers.train_loop import train_trial

    assert trial_code().result() is train_trial


def test_an_import_that_fails_is_raised_where_the_trial_asks_for_the_code(nothing_started, monkeypatch):
    monkeypatch.setitem(sys.modules, "timm", None)  # makes ``import timm`` raise ImportError
    code = trial_code()
    with pytest.raises(ImportError):
        code.result()


def test_the_imports_started_with_the_process_are_taken_over_once(nothing_started):
    start_at_process_start()
    started = code_module._started
    assert trial_code() is started
    assert trial_code() is not started  # taken: a later call imports (at once: the modules are loaded)


def test_the_setup_hook_starts_the_imports_in_a_ranks_process_only(nothing_started, monkeypatch):
    monkeypatch.delenv(RANK_ENV_VAR, raising=False)
    on_worker_start()
    assert code_module._started is None
    monkeypatch.setenv(RANK_ENV_VAR, "1")
    on_worker_start()
    assert code_module._started is not None
    code_module._started.result()


# A fresh interpreter: counts the calls that initialise CUDA (or read the device count, which does too)
# while the trials' code is imported as on a GPU rank.
CUDA_CALLS = """
import os
os.environ["DS_ACCELERATOR"] = "cuda"
import torch

calls = []
def counted(owner, name):
    real = getattr(owner, name)
    def call(*args, **kwargs):
        calls.append(name)
        return real(*args, **kwargs)
    setattr(owner, name, call)

for owner, name in [(torch.cuda, "_lazy_init"), (torch.cuda, "is_available"), (torch.cuda, "device_count"),
                    (torch._C, "_cuda_getDeviceCount"), (torch._C, "_cuda_init")]:
    counted(owner, name)
from trainers.trial_code import trial_code
trial_code().result()
print(sorted(set(calls)))
"""


def test_the_imports_never_touch_the_device_so_ray_can_still_choose_the_visible_gpus():
    proc = subprocess.run([sys.executable, "-c", CUDA_CALLS], cwd=REPO, capture_output=True, text=True, timeout=300)
    assert proc.returncode == 0, proc.stderr[-4000:]
    assert proc.stdout.strip().splitlines()[-1] == "[]"
