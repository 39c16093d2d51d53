"""Test-only fault injection: make one rank of a trial fail once, at a chosen optimizer step.

``inject_fault = "KIND@RANK:STEP"``; KIND is ``raise`` (a Python exception), ``exit`` (the
worker process kills itself with SIGKILL, as a crashed or OOM-killed process would) or
``oom`` (raises ``torch.OutOfMemoryError``, as the device allocator does) or ``hang`` (the rank
goes silent, so the others wait in their next collective until its timeout).  A fault fires
once per trial: a marker file in the trial's storage records it, so the restarted group
goes past that step.
"""

from __future__ import annotations

import os
import signal
import time
from pathlib import Path

import torch

from raysweep.core.params import parse_fault


class FaultInjector:
    def __init__(self, spec: str, rank: int, marker_dir: str):
        self.fault = parse_fault(spec) if spec else None
        self.marker = Path(marker_dir) / f"fault-rank{rank}" if self.fault else None
        self.armed = bool(self.fault and self.fault.rank == rank and not self.marker.exists())

    def maybe_fire(self, step: int) -> None:
        if not self.armed or step != self.fault.step:
            return
        self.armed = False
        self.marker.parent.mkdir(parents=True, exist_ok=True)
        self.marker.write_text(self.fault.kind)
        if self.fault.kind == "exit":
            os.kill(os.getpid(), signal.SIGKILL)
        if self.fault.kind == "hang":
            time.sleep(10**6)
        if self.fault.kind == "oom":
            raise torch.OutOfMemoryError(f"injected out of memory at step {step}")
        raise RuntimeError(f"injected fault at step {step}")
