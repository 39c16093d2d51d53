"""The suite's own scheduling over pytest-xdist's workers (tests/conftest.py): a module's tests run on one worker,
so a module fixture (a sweep, a set of spawned ranks) is built once."""

from __future__ import annotations

import re
import subprocess
import sys
from collections import defaultdict
from pathlib import Path

REPO = Path(__file__).resolve().parents[1]


def test_every_modules_tests_run_on_one_worker():
    modules = ["tests/test_command.py", "tests/test_packaging.py"]
    proc = subprocess.run(
        [sys.executable, "-m", "pytest", "-p", "no:cacheprovider", "-v", "-n", "2", *modules],
        cwd=REPO,
        capture_output=True,
        text=True,
        timeout=300,
    )
    assert proc.returncode == 0, proc.stdout[-3000:]
    workers = defaultdict(set)
    for line in proc.stdout.splitlines():
        if found := re.match(r"\[(gw\d+)\] .*PASSED (tests/\S+?\.py)::", line):
            workers[found[2]].add(found[1])
    assert sorted(workers) == modules and all(len(w) == 1 for w in workers.values()), dict(workers)
