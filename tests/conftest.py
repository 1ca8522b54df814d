"""The shared ``ray`` fixture, and the hypothesis profiles: 'ci' (bounded and derandomized, the default under
CI=true), 'dev' (default; derandomized too, with more examples), 'long' (random, nightly-style: the one that
hunts for new failures).

Select with LITERT_PY_HYPOTHESIS_PROFILE=long.
"""

from __future__ import annotations

import os

import pytest
from hypothesis import HealthCheck, settings

_common = dict(
    deadline=None,
    suppress_health_check=[HealthCheck.too_slow, HealthCheck.data_too_large],
    derandomize=False,
    print_blob=True,
)
# CI and dev draw the same examples on every run (a red run is reproducible, never a coin toss); long explores.
# Failures the long profile finds become fixes with regression tests, or listed xfails.
settings.register_profile("ci", max_examples=25, **{**_common, "derandomize": True})
settings.register_profile("dev", max_examples=40, **{**_common, "derandomize": True})
settings.register_profile("long", max_examples=1000, **_common)
settings.load_profile(os.environ.get("LITERT_PY_HYPOTHESIS_PROFILE", "ci" if os.environ.get("CI") else "dev"))


@pytest.fixture(scope="module")
def ray():
    """A local Ray (2 CPUs) for one test module; ray is a test dependency (tests.oracle.require)."""
    from tests.oracle import require

    (ray,) = require("ray")
    ray.init(num_cpus=2, include_dashboard=False, log_to_driver=False)
    yield ray
    ray.shutdown()
