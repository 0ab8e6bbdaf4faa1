"""Malformed cookies read as absent on every page, never as a server error."""

from __future__ import annotations

import pytest

pytestmark = pytest.mark.django_db


@pytest.mark.parametrize("path", ["/builder/", "/admin/", "/api/workflows/"])
def test_a_nul_in_the_session_cookie_reads_as_logged_out(client, path):
    client.cookies["sessionid"] = "abc\x00def"

    response = client.get(path)

    assert response.status_code in (302, 401, 403)
