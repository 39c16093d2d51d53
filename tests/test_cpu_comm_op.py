"""The record of DeepSpeed's CPU communication op: a launch that finds it current imports neither DeepSpeed
nor torch."""

from __future__ import annotations

import json
import subprocess
import sys
from pathlib import Path

from raysweep.runtime.caches.cpu_comm_op import NOTHING_TO_BUILD, installation_key, recorded_ready


def write(record: Path, key: str, built: str) -> Path:
    record.write_text(json.dumps({"key": key, "built": built}))
    return record


def test_a_record_of_this_installation_whose_op_is_there_is_ready(tmp_path):
    op = tmp_path / "deepspeed_shm_comm.so"
    op.write_bytes(b"")
    assert recorded_ready(write(tmp_path / "r.json", installation_key(), str(op)), installation_key())
    assert recorded_ready(write(tmp_path / "r.json", installation_key(), NOTHING_TO_BUILD), installation_key())


def test_a_record_of_another_installation_a_removed_op_or_a_broken_file_is_not(tmp_path):
    op = tmp_path / "deepspeed_shm_comm.so"
    op.write_bytes(b"")
    key = installation_key()
    assert not recorded_ready(write(tmp_path / "r.json", key + "-other torch", str(op)), key)
    assert not recorded_ready(write(tmp_path / "r.json", key, str(tmp_path / "gone.so")), key)
    (tmp_path / "r.json").write_text("{not json")
    assert not recorded_ready(tmp_path / "r.json", key)
    assert not recorded_ready(tmp_path / "missing.json", key)


def test_the_key_names_deepspeed_torch_python_and_the_extension_directory(monkeypatch):
    monkeypatch.setenv("TORCH_EXTENSIONS_DIR", "/somewhere/ext")
    from importlib.metadata import version

    expected = [version("deepspeed"), version("torch"), sys.implementation.cache_tag, "/somewhere/ext"]
    assert installation_key() == "|".join(expected)


def test_a_launch_that_finds_its_record_current_imports_neither_deepspeed_nor_torch(tmp_path):
    """The first call finds (or builds) the op and records it; a second process reads the record alone."""
    record = tmp_path / "cpu_comm_op.json"
    code = (
        "import sys; from pathlib import Path\n"
        "from raysweep.runtime.caches.cpu_comm_op import build_cpu_comm_op_once\n"
        f"build_cpu_comm_op_once(Path({str(record)!r}))\n"
        "print(sorted(m for m in ('deepspeed', 'torch') if m in sys.modules))\n"
    )
    first = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, timeout=600)
    assert first.returncode == 0, first.stderr
    assert json.loads(record.read_text())["key"] == installation_key()
    again = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, timeout=600)
    assert again.returncode == 0, again.stderr
    assert again.stdout.strip().splitlines()[-1] == "[]", again.stdout
