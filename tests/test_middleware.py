"""Malformed cookies read as absent on every page, never as a server error."""

from __future__ import annotations

import pytest

pytestmark = pytest.mark.django_db

# Long enough to pass Django's own session-key length check, so it would reach the database.
NUL_SESSION = "sessionid=abcdefghij\x00klmnopqrstuvwxyz"


@pytest.mark.parametrize(("path", "expected"), [("/builder/", 302), ("/admin/", 302), ("/api/workflows/", 401)])
def test_a_nul_in_the_session_cookie_reads_as_logged_out(client, path, expected):
    client.raise_request_exception = False

    response = client.get(path, HTTP_COOKIE=NUL_SESSION)

    assert response.status_code == expected
