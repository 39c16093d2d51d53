"""DeepSpeed's CPU communication op, built once per machine before a local CPU sweep's first trial.

Every CPU rank loads DeepSpeed's shared-memory op; the first load on a machine compiles it (about a
minute, then cached by torch.utils.cpp_extension).  Built here, once, before any trial's workers start,
the user is told what the wait is, and no trial's setup time includes a compiler run.

Finding out whether it is built means importing DeepSpeed and torch, seconds of the launch on a small
machine.  So the answer is recorded (``RECORD``) for the installed DeepSpeed, torch and Python and the
extension directory, and a later launch that finds the same record, and the built op still where it said,
imports neither.
"""

from __future__ import annotations

import json
import os
import sys
from importlib.metadata import PackageNotFoundError, version
from pathlib import Path

from raysweep.core.errors import UsageError

RECORD = Path("~/.cache/raysweep/cpu_comm_op.json")
NOTHING_TO_BUILD = ""  # recorded where DeepSpeed ships the op prebuilt, or does not use it on this platform


def build_cpu_comm_op_once(record: Path = RECORD) -> None:
    """For a local Ray without GPUs, build DeepSpeed's CPU communication op now, saying so, if it is not built yet."""
    # DeepSpeed would pick its CPU accelerator anyway, but warn that it found no GPU (the ranks are
    # told too: train_run.worker_env).
    os.environ.setdefault("DS_ACCELERATOR", "cpu")
    record = record.expanduser()
    key = installation_key()
    if recorded_ready(record, key):
        return
    built = find_or_build()
    record.parent.mkdir(parents=True, exist_ok=True)
    record.write_text(json.dumps({"key": key, "built": built}))


def installation_key() -> str:
    """What the answer depends on, read without importing DeepSpeed or torch."""
    try:
        versions = [version("deepspeed"), version("torch")]
    except PackageNotFoundError:
        versions = ["absent"]
    return "|".join([*versions, sys.implementation.cache_tag, os.environ.get("TORCH_EXTENSIONS_DIR", "")])


def recorded_ready(record: Path, key: str) -> bool:
    """Whether the record says, for this installation, that nothing is to be built or the built op is there."""
    try:
        found = json.loads(record.read_text())
    except (OSError, ValueError):
        return False
    if not isinstance(found, dict) or found.get("key") != key or not isinstance(found.get("built"), str):
        return False
    return found["built"] == NOTHING_TO_BUILD or Path(found["built"]).is_file()


def find_or_build() -> str:
    """The built op's path (building it first, saying so, where it is missing), or NOTHING_TO_BUILD."""
    from trainers.quiet import quiet_noise_logs

    quiet_noise_logs()
    from deepspeed.git_version_info import installed_ops
    from deepspeed.ops.op_builder.cpu import ShareMemCommBuilder
    from torch.utils.cpp_extension import _get_build_directory

    builder = ShareMemCommBuilder()
    if installed_ops.get(builder.name) or not builder.is_compatible():
        return NOTHING_TO_BUILD
    # torch's own rule for where load() builds and caches an extension (TORCH_EXTENSIONS_DIR or ~/.cache)
    build_dir = Path(_get_build_directory(builder.name, verbose=False))
    built = build_dir / f"{builder.name}.so"
    if built.is_file():
        return str(built)
    print(
        f"raysweep: building DeepSpeed's CPU communication op once for this machine "
        f"(about a minute; cached in {build_dir})",
        flush=True,
    )
    try:
        builder.load(verbose=False)
    except Exception as e:  # the trials' DeepSpeed would fail the same way, one by one
        raise UsageError(
            f"DeepSpeed's CPU communication op does not build on this machine ({str(e).splitlines()[0]}); "
            "it needs a C++ compiler and ninja (pip install ninja)"
        ) from None
    return str(built)
