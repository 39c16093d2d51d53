"""A driver joining a cluster of another Ray (or Python) version: Ray's many-line refusal becomes one line naming
both versions and what to install (``raysweep.runtime.cluster.version_mismatch``).

Ray's own message is made here by Ray's own check (``ray._private.utils.check_version_info``, what ``ray.init``
runs against the cluster's metadata), so a Ray release that words it otherwise fails these tests.  A real cluster
of another Ray version needs a second Ray installation; ``tests/integration/test_ray_version_mismatch.py`` runs
one where there is (``RAYSWEEP_OTHER_RAY``).
"""

from __future__ import annotations

import platform

import pytest
import ray
from ray._private.utils import check_version_info

from raysweep.runtime.cluster import version_mismatch


def ray_refusal(cluster_ray: str, cluster_python: str, this_process: str = "node 10.0.0.5") -> str:
    with pytest.raises(RuntimeError) as refused:
        check_version_info({"ray_version": cluster_ray, "python_version": cluster_python}, this_process)
    return str(refused.value)


def test_another_ray_version_is_one_line_naming_both_and_the_ray_to_install():
    message = ray_refusal("1.13.0", platform.python_version())
    assert message.count("\n") > 3  # what Ray says
    assert version_mismatch("head:6379", message) == (
        f"the cluster at head:6379 runs Ray 1.13.0; this driver has Ray {ray.__version__}: install ray==1.13.0 here"
    )


def test_another_python_version_names_the_python_to_run_the_driver_with():
    assert version_mismatch("head:6379", ray_refusal(ray.__version__, "3.10.2")) == (
        f"the cluster at head:6379 runs Python 3.10.2; this driver has Python {platform.python_version()}: "
        "run this driver with Python 3.10.2"
    )


def test_both_versions_differing_name_both_fixes_and_a_ray_client_is_refused_alike():
    assert version_mismatch("ray://head:10001", ray_refusal("1.12.1", "3.10.2", "Ray Client")) == (
        f"the cluster at ray://head:10001 runs Ray 1.12.1 on Python 3.10.2; this driver has Ray {ray.__version__} "
        f"on Python {platform.python_version()}: install ray==1.12.1 here and run this driver with Python 3.10.2"
    )


def test_any_other_error_is_not_a_version_mismatch():
    assert version_mismatch("head:6379", "Failed to connect to GCS within 60 seconds") is None
