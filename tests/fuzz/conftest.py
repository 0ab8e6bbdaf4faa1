"""The fuzz tier (marker ``fuzz``): schemathesis over the OpenAPI schema and Hypothesis over every
way in. Hypothesis profiles: ``ci`` (the default: bounded, the whole tier in well under 3 minutes
on a 2-core machine) and ``nightly`` (HYPOTHESIS_PROFILE=nightly: many more cases, no time bound);
docs/testing.md says how to run each."""

from __future__ import annotations

import os

from hypothesis import HealthCheck, settings

from tests.fuzz.counts import CASES

settings.register_profile(
    "ci", max_examples=10, deadline=None, derandomize=True, print_blob=True,
    suppress_health_check=[HealthCheck.function_scoped_fixture, HealthCheck.too_slow, HealthCheck.data_too_large,
                           HealthCheck.filter_too_much],
)
settings.register_profile(
    "nightly", max_examples=2000, deadline=None, derandomize=False, print_blob=True,
    suppress_health_check=list(HealthCheck),
)
PROFILE = os.environ.get("HYPOTHESIS_PROFILE", "ci")
settings.load_profile(PROFILE)


def pytest_terminal_summary(terminalreporter):
    if CASES:
        total = sum(CASES.values())
        terminalreporter.write_line(f"fuzz tier ({PROFILE} profile): {total} generated cases")
        for name, count in sorted(CASES.items()):
            terminalreporter.write_line(f"  {name}: {count}")
