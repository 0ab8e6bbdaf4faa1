"""The builder's relative times: seconds for a 10 s schedule, never "in 0 minutes"."""

from __future__ import annotations

from datetime import UTC, datetime, timedelta

import pytest

from builder.templatetags.builder_time import relative

NOW = datetime(2026, 12, 1, 12, 0, tzinfo=UTC)


@pytest.mark.parametrize(("offset", "text"), [
    (8, "in 8 s"),
    (-8, "8 s ago"),
    (0, "now"),
    (59, "in 59 s"),
    (60, "in 1 min"),
    (-150, "2 min ago"),
    (3 * 3600 + 5, "in 3 h"),
    (-2 * 86400, "2 d ago"),
])
def test_relative_time(offset, text):
    assert relative(NOW + timedelta(seconds=offset), NOW) == text


def test_no_time_is_blank():
    assert relative(None) == ""
