"""The user guide builds as a site in strict mode (``mkdocs.yml``): a broken link, a missing anchor, a page
missing from the nav or a README link that leaves docs/ fails the build, and so fails the tests. The README is the
site's home page; it starts with the commands that install and run raysweep and its tests."""

from __future__ import annotations

import shutil
import subprocess
import sys
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[1]
README = ROOT / "README.md"
FIRST_COMMANDS = [
    "pip install -e . && python -m raysweep.tune --space batch_grid",
    "pip install -e '.[test]' && python -m pytest",
]


def build(config: Path, site: Path) -> subprocess.CompletedProcess:
    # never with --verbose: mkdocs 1.6.1 skips its anchor checks at debug level
    command = [
        sys.executable,
        "-m",
        "mkdocs",
        "build",
        "--strict",
        "--config-file",
        str(config),
        "--site-dir",
        str(site),
    ]
    return subprocess.run(command, cwd=config.parent, capture_output=True, text=True, timeout=300)


def test_the_guide_builds_in_strict_mode_with_the_readme_as_its_home_page(tmp_path):
    proc = build(ROOT / "mkdocs.yml", tmp_path / "site")
    assert proc.returncode == 0, proc.stderr
    home = (tmp_path / "site" / "index.html").read_text(encoding="utf-8")
    assert FIRST_COMMANDS[0] in home.replace("&amp;", "&")
    # the README's links into docs/ point at the pages beside the home page
    assert 'href="running/"' in home and 'href="results/"' in home


def test_a_broken_anchor_or_link_fails_the_build(tmp_path):
    shutil.copy(ROOT / "mkdocs.yml", tmp_path / "mkdocs.yml")
    shutil.copy(README, tmp_path / "README.md")
    shutil.copytree(ROOT / "docs", tmp_path / "docs", ignore=shutil.ignore_patterns("results", "__pycache__"))
    running = tmp_path / "docs" / "running.md"
    running.write_text(running.read_text() + "\n[a](results.md#no-such-heading) and [b](no-such-page.md)\n")
    proc = build(tmp_path / "mkdocs.yml", tmp_path / "site")
    assert proc.returncode != 0
    assert "'#no-such-heading'" in proc.stderr and "'no-such-page.md'" in proc.stderr, proc.stderr


def test_the_readme_starts_with_the_install_and_test_commands():
    commands = [line.strip() for line in README.read_text().splitlines() if line.startswith("    ")]
    assert commands[:2] == FIRST_COMMANDS


def test_the_test_extra_carries_the_docs_extra_so_the_tests_can_build_the_site():
    tomllib = pytest.importorskip("tomllib", reason="the standard library reads TOML from Python 3.11")
    extras = tomllib.loads((ROOT / "pyproject.toml").read_text())["project"]["optional-dependencies"]
    assert extras["docs"] and set(extras["docs"]) <= set(extras["test"])
