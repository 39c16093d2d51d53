"""What a wheel of raysweep carries: the bundled spaces as package data of ``search_spaces``, so an installed
raysweep finds them from any directory (``raysweep.planning.space.SPACES_DIR`` reads them with importlib.resources)."""

from __future__ import annotations

import shutil
import subprocess
import sys
import zipfile
from pathlib import Path

import pytest
from packaging.requirements import Requirement
from packaging.version import Version

from raysweep.planning.space import SPACES_DIR

REPO = Path(__file__).resolve().parents[1]


def test_the_wheel_ships_every_bundled_space_inside_the_search_spaces_package(tmp_path):
    source = tmp_path / "src"  # a copy: setuptools builds in the source tree, and the checkout stays clean
    source.mkdir()
    for name in ("pyproject.toml", "README.md"):
        shutil.copy(REPO / name, source / name)
    for package in ("raysweep", "trainers", "analysis", "search_spaces"):
        shutil.copytree(REPO / package, source / package, ignore=shutil.ignore_patterns("__pycache__"))
    wheel_command = [sys.executable, "-m", "pip", "wheel", "--no-deps", "--no-build-isolation", "-q"]
    subprocess.run([*wheel_command, "-w", str(tmp_path), str(source)], check=True, capture_output=True, timeout=300)
    (wheel,) = tmp_path.glob("raysweep-*.whl")
    names = set(zipfile.ZipFile(wheel).namelist())
    assert "search_spaces/__init__.py" in names
    bundled = {f"search_spaces/{p.name}" for p in SPACES_DIR.glob("*.yaml")}
    assert len(bundled) > 10 and bundled <= names
    assert not any(n.startswith("../") or "/../" in n for n in names)


def test_the_test_extra_runs_the_newest_ray_of_the_supported_range():
    """CI installs ``.[test]``: its Ray must be the top of what ``pip install .`` allows, so that the suite tests the
    newest release a user can get with raysweep, not whatever Ray the machine had."""
    tomllib = pytest.importorskip("tomllib")  # Python 3.11+
    project = tomllib.loads((REPO / "pyproject.toml").read_text())["project"]
    (supported,) = [Requirement(d) for d in project["dependencies"] if Requirement(d).name == "ray"]
    (tested,) = [Requirement(d) for d in project["optional-dependencies"]["test"] if Requirement(d).name == "ray"]
    (ceiling,) = [s.version for s in supported.specifier if s.operator == "<"]
    (floor,) = [s.version for s in tested.specifier if s.operator == ">="]
    newest_minor = Version(ceiling).minor - 1
    assert Version(floor).release[:2] == (Version(ceiling).major, newest_minor), (supported, tested)
    assert tested.extras == supported.extras and set(tested.specifier) >= {
        s for s in supported.specifier if s.operator == "<"
    }
