"""One format for admin figures: counts, sizes, expiry and runs."""

from __future__ import annotations

import uuid
from datetime import UTC, datetime, timedelta

import pytest

from keeperstate.admin.display import count, expiry_text, run_link, size, usage_text
from keeperstate.state.selectors import OrgUsage

NOW = datetime(2026, 11, 29, 12, 0, tzinfo=UTC)


@pytest.mark.parametrize(("number", "text"), [(0, "0"), (12, "12"), (10000, "10,000"), (1234567, "1,234,567")])
def test_counts_take_thousands_separators(number, text):
    assert count(number) == text


@pytest.mark.parametrize(
    ("num_bytes", "text"),
    [(1, "1 byte"), (3, "3 bytes"), (1023, "1,023 bytes"), (1024, "1 KB"), (3174, "3.1 KB"),
     (52_428_800, "50 MB"), (5 * 1024**3, "5 GB")],
)
def test_sizes_use_one_unit_with_at_most_one_decimal(num_bytes, text):
    assert size(num_bytes) == text


def test_usage_reads_as_keys_and_bytes_of_the_budget():
    usage = OrgUsage(live_keys=12, stored_bytes=3174, max_keys=10_000, max_bytes=52_428_800)

    assert usage_text(usage) == "12 of 10,000 keys · 3.1 KB of 50 MB"


@pytest.mark.parametrize(
    ("expires_at", "text"),
    [(None, "live"), (NOW + timedelta(minutes=5), "expires in 5 min"), (NOW - timedelta(hours=2), "expired 2 h ago"),
     (NOW + timedelta(seconds=40), "expires in 40 s"), (NOW + timedelta(days=3), "expires in 3 d")],
)
def test_expiry_is_one_phrase(expires_at, text):
    assert expiry_text(expires_at, NOW) == text


@pytest.mark.django_db
def test_a_run_is_its_short_id_with_a_link():
    execution_id = uuid.UUID("3f2a9c1e-0000-4000-8000-000000000000")

    html = run_link(execution_id)

    assert ">run 3f2a9c1e</a>" in html
    assert f"/admin/keeperstate/workflowexecution/{execution_id}/change/" in html
    assert run_link(None) == "—"
