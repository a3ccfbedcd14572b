"""Shared test configuration."""

import os

from hypothesis import HealthCheck, settings

# "default": the CI run. "thorough": `HYPOTHESIS_PROFILE=thorough pytest` for a deeper search.
settings.register_profile("default", deadline=None, suppress_health_check=[HealthCheck.too_slow])
settings.register_profile(
    "thorough",
    max_examples=2000,
    deadline=None,
    suppress_health_check=[HealthCheck.too_slow],
)
settings.load_profile(os.environ.get("HYPOTHESIS_PROFILE", "default"))
