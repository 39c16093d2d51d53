"""How the suite's tests are shared out over pytest-xdist's workers (the README's test command uses every core)."""

from __future__ import annotations

import os

import pytest

# Two workers' torch processes (and the sweeps' ranks they start) share the cores: OpenMP threads that spin while
# waiting for work take them from the other worker's processes. Read by OpenMP as torch loads it, so set here,
# before any test module imports torch, and inherited by every process a test starts.
os.environ.setdefault("OMP_WAIT_POLICY", "PASSIVE")

# Session fixtures that tests of several modules read: those modules run on one worker, so each fixture runs once.
SHARED_SESSION_FIXTURES = ("two_rank_sweep", "python_api_sweep")


@pytest.hookimpl(tryfirst=True)  # before xdist's own hook, which reads the groups into the tests' ids
def pytest_collection_modifyitems(items):
    # With --dist loadgroup a group's tests run on one worker; one group per module keeps each module fixture (a
    # sweep, a set of spawned ranks) built once, and the modules that share a session fixture are one group.
    group_of_module: dict[str, str] = {}
    for item in items:
        module = item.nodeid.split("::", 1)[0]
        shared = [name for name in SHARED_SESSION_FIXTURES if name in item.fixturenames]
        if shared:
            group_of_module[module] = shared[0]
        else:
            group_of_module.setdefault(module, module)
    for item in items:
        item.add_marker(pytest.mark.xdist_group(group_of_module[item.nodeid.split("::", 1)[0]]))
