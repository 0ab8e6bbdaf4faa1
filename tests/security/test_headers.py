"""Response headers: a strict CSP on every HTML page (and no inline script or handler in them),
no-store on answers with tenant data, the usual hardening headers, HSTS over HTTPS when on."""

from __future__ import annotations

import re

import pytest
from django.contrib.auth import get_user_model
from django.test import Client

from tests.api.conftest import token_client

pytestmark = pytest.mark.django_db

INLINE_SCRIPT = re.compile(r"<script(?![^>]*\bsrc=)(?![^>]*type=\"application/json\")[^>]*>", re.I)
INLINE_HANDLER = re.compile(r"<[^>]+\son[a-z]+\s*=", re.I)


@pytest.fixture
def root_client(client):
    root = get_user_model().objects.create_superuser("root", "root@example.com", "pw-root")
    client.force_login(root)
    return client


def html_pages(monitor) -> list[tuple[str, str]]:
    return [
        ("anonymous", "/accounts/login/"),
        ("anonymous", "/admin/login/"),
        ("anonymous", "/api/docs/"),
        ("alice", "/builder/"),
        ("alice", f"/builder/workflows/{monitor.id}/"),
        ("alice", "/builder/palette/"),
        ("alice", "/builder/forms/State%20Set/"),
        ("root", "/admin/"),
        ("root", "/admin/keeperstate/workflow/"),
        ("root", f"/admin/keeperstate/workflow/{monitor.id}/change/"),
        ("root", "/admin/keeperstate/workflowstate/"),
        ("root", "/admin/keeperstate/auditevent/"),
        ("root", "/admin/keeperstate/apitoken/"),
    ]


def client_for(who: str, user, root_client) -> Client:
    if who == "root":
        return root_client
    client = Client()
    if who == "alice":
        client.force_login(user)
    return client


def test_every_html_page_has_a_strict_csp_and_no_inline_script(user, monitor, root_client):
    for who, path in html_pages(monitor):
        response = client_for(who, user, root_client).get(path)
        assert response.status_code == 200, path
        policy = response["Content-Security-Policy"]
        directives = dict(d.strip().split(" ", 1) for d in policy.split(";") if d.strip())
        assert directives["script-src"] == "'self'", path
        assert "unsafe" not in directives["default-src"] + directives["script-src"] + directives["style-src"], path
        assert directives["object-src"] == "'none'", path
        assert directives["frame-ancestors"] == "'none'", path
        page = response.content.decode()
        assert not INLINE_SCRIPT.search(page), (path, INLINE_SCRIPT.search(page))
        assert not INLINE_HANDLER.search(page), (path, INLINE_HANDLER.search(page))


def test_hardening_headers_on_pages_and_answers(user, monitor):
    client = Client()
    client.force_login(user)

    for response in (client.get("/builder/"), token_client(user).get("/api/workflows/")):
        assert response["X-Content-Type-Options"] == "nosniff"
        assert response["Referrer-Policy"] == "same-origin"
        assert response["X-Frame-Options"] == "DENY"


@pytest.mark.parametrize("path", ["/api/workflows/", "/api/tokens/", "/api/audit/"])
def test_api_answers_are_not_stored_by_caches(user, path):
    assert "no-store" in token_client(user).get(path)["Cache-Control"]


def test_builder_pages_and_endpoints_with_tenant_data_are_not_stored(user, monitor):
    client = Client()
    client.force_login(user)

    for path in ("/builder/", f"/builder/workflows/{monitor.id}/", f"/api/workflows/{monitor.id}/state-summary/"):
        assert "no-store" in client.get(path)["Cache-Control"], path


def test_hsts_is_sent_over_https_when_configured(user, settings):
    settings.SECURE_HSTS_SECONDS = 31536000
    client = Client()

    secure = client.get("/accounts/login/", secure=True)
    plain = client.get("/accounts/login/")

    assert secure["Strict-Transport-Security"].startswith("max-age=31536000")
    assert "Strict-Transport-Security" not in plain
