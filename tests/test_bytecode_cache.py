"""A sweep's processes share a bytecode cache only where Python cannot keep bytecode beside the sources."""

import importlib.util
import os
import py_compile
import sys
from functools import partial
from pathlib import Path

import pytest

from raysweep.runtime.caches.bytecode_cache import (
    bytecode_cache,
    bytecode_cache_env,
    bytecode_is_current,
    keeps_bytecode,
)


@pytest.fixture
def package(tmp_path, monkeypatch) -> Path:
    """An importable package ``tinypkg`` with two modules, compiled as pip installs them."""
    root = tmp_path / "tinypkg"
    root.mkdir()
    for name, text in (("__init__.py", "X = 1\n"), ("util.py", "def f():\n    return 2\n")):
        (root / name).write_text(text)
        py_compile.compile(str(root / name), doraise=True)
    monkeypatch.syspath_prepend(str(tmp_path))
    return root


def touch_later(source: Path) -> None:
    """The source changed after its bytecode was written (or the image reset its times)."""
    stat = source.stat()
    os.utime(source, (stat.st_atime, stat.st_mtime + 10))


def test_bytecode_compiled_from_the_source_as_it_is_is_current(package):
    assert bytecode_is_current(package / "util.py")


def test_bytecode_is_not_current_when_missing_older_than_its_source_or_of_another_python(package):
    (package / "new.py").write_text("Y = 3\n")
    assert not bytecode_is_current(package / "new.py")
    touch_later(package / "util.py")
    assert not bytecode_is_current(package / "util.py")
    pyc = Path(importlib.util.cache_from_source(str(package / "__init__.py")))
    pyc.write_bytes(b"\x00\x00\x0d\x0a" + pyc.read_bytes()[4:])
    assert not bytecode_is_current(package / "__init__.py")


def test_a_package_keeps_its_bytecode_when_current_or_when_python_can_write_it_again(package, monkeypatch):
    monkeypatch.setattr(sys, "dont_write_bytecode", True)
    assert keeps_bytecode(package)
    touch_later(package / "util.py")
    assert not keeps_bytecode(package)
    monkeypatch.setattr(sys, "dont_write_bytecode", False)
    assert keeps_bytecode(package)  # Python rewrites it at the next import
    monkeypatch.setattr(
        "raysweep.runtime.caches.bytecode_cache.os.access", lambda path, mode: False
    )  # a read-only mount
    assert not keeps_bytecode(package)


def test_no_cache_where_the_packages_keep_their_bytecode(package, monkeypatch):
    monkeypatch.setattr(sys, "dont_write_bytecode", False)
    assert bytecode_cache_env(("tinypkg", "no_such_package_here")) == {}


def test_a_cache_under_the_users_home_where_a_package_recompiles_in_every_process(package, monkeypatch):
    monkeypatch.setattr(sys, "dont_write_bytecode", False)
    touch_later(package / "util.py")
    monkeypatch.setattr("raysweep.runtime.caches.bytecode_cache.os.access", lambda path, mode: False)
    env = bytecode_cache_env(("tinypkg",), cache_dir=Path("~/cache-here"))
    assert env == {"PYTHONPYCACHEPREFIX": str(Path.home() / "cache-here"), "PYTHONDONTWRITEBYTECODE": ""}


def test_a_cache_where_python_writes_no_bytecode_and_some_is_not_current(package, monkeypatch):
    monkeypatch.setattr(sys, "dont_write_bytecode", True)
    assert bytecode_cache_env(("tinypkg",)) == {}
    touch_later(package / "util.py")
    assert "PYTHONPYCACHEPREFIX" in bytecode_cache_env(("tinypkg",))


def test_a_prefix_the_user_chose_is_left_as_it_is(package, monkeypatch):
    monkeypatch.setattr(sys, "dont_write_bytecode", True)
    touch_later(package / "util.py")
    monkeypatch.setattr(sys, "pycache_prefix", "/somewhere/of/theirs")
    assert bytecode_cache_env(("tinypkg",)) == {}


def test_this_process_writes_and_reads_bytecode_in_the_cache_while_the_sweep_runs(package, monkeypatch, tmp_path):
    monkeypatch.setattr(sys, "pycache_prefix", None)
    monkeypatch.setattr(sys, "dont_write_bytecode", True)
    touch_later(package / "util.py")
    with bytecode_cache(("tinypkg",), tmp_path / "cache") as env:
        assert sys.pycache_prefix == env["PYTHONPYCACHEPREFIX"] == str(tmp_path / "cache")
        assert not sys.dont_write_bytecode
        monkeypatch.delitem(sys.modules, "tinypkg.util", raising=False)
        import tinypkg.util  # noqa: F401

        cached = Path(importlib.util.cache_from_source(str(package / "util.py")))
        assert cached.is_file() and cached.is_relative_to(tmp_path / "cache")
    assert sys.pycache_prefix is None and sys.dont_write_bytecode  # as the caller had them


def test_the_cold_floor_command_measures_under_the_cache_a_sweep_would_get(package, tmp_path, monkeypatch):
    from raysweep.bench import floor as cold_floor

    touch_later(package / "util.py")
    monkeypatch.setattr(sys, "dont_write_bytecode", True)
    monkeypatch.setattr(cold_floor, "bytecode_cache", partial(bytecode_cache, ("tinypkg",), tmp_path / "cache"))
    seen = []
    monkeypatch.setattr(cold_floor, "measure", lambda model, batch: seen.append(sys.pycache_prefix) or {"engine": 1.0})
    assert cold_floor.main(["--batch", "8"]) == 0
    assert seen == [str(tmp_path / "cache")]
    assert sys.pycache_prefix is None
