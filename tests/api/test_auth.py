"""Authentication: tokens and sessions, CSRF on session writes, and the 401 shape."""

from __future__ import annotations

import pytest
from django.conf import settings
from django.db import connection
from django.test.utils import CaptureQueriesContext
from django.utils.crypto import get_random_string

from keeperstate.accounts.tokens import create_token
from keeperstate.workflows.models import Workflow
from tests.api.conftest import json_client, token_client
from tests.factories import make_user

pytestmark = pytest.mark.django_db


@pytest.fixture
def session(user):
    """A logged-in browser session that, like a browser, is held to CSRF checks."""
    client = json_client(enforce_csrf_checks=True)
    assert client.login(username="alice", password="pw-alice")
    return client


def with_csrf_token(client) -> dict[str, str]:
    """Give the session a CSRF cookie and return the header that echoes it (as the editor does)."""
    secret = get_random_string(32)
    client.cookies[settings.CSRF_COOKIE_NAME] = secret
    return {"HTTP_X_CSRFTOKEN": secret}


def test_token_authenticates_a_request(api, workflow):
    response = api.get("/api/workflows/")

    assert response.status_code == 200
    assert [w["id"] for w in response.json()["results"]] == [str(workflow.id)]


def test_no_credentials_answer_401_with_a_code(anonymous, workflow):
    response = anonymous.get(f"/api/workflows/{workflow.id}/")

    assert response.status_code == 401
    assert response.json() == {"code": "NOT_AUTHENTICATED", "detail": "Authentication credentials were not provided."}
    assert response["WWW-Authenticate"] == "Token"


def test_unknown_token_answers_401(anonymous):
    anonymous.credentials(HTTP_AUTHORIZATION="Token ks_" + "0" * 64)

    response = anonymous.get("/api/workflows/")

    assert response.status_code == 401
    assert response.json()["code"] == "AUTHENTICATION_FAILED"


def test_session_authenticates_a_read(session, workflow):
    response = session.get(f"/api/workflows/{workflow.id}/")

    assert response.status_code == 200
    assert response.json()["name"] == workflow.name


def test_session_write_without_csrf_token_is_refused_and_changes_nothing(session, org):
    response = session.post("/api/workflows/", {"name": "Forged"})

    assert response.status_code == 403
    assert response.json()["code"] == "CSRF_FAILED"
    assert not Workflow.objects.filter(name="Forged").exists()


def test_session_write_with_csrf_token_succeeds(session, org):
    response = session.post("/api/workflows/", {"name": "Mine"}, **with_csrf_token(session))

    assert response.status_code == 201, response.json()
    assert Workflow.objects.get(name="Mine").organization == org


def test_session_delete_without_csrf_token_is_refused(session, workflow):
    response = session.delete(f"/api/workflows/{workflow.id}/")

    assert response.status_code == 403
    workflow.refresh_from_db()
    assert workflow.deleted_at is None


def test_token_write_needs_no_csrf_token(user, org):
    client = json_client(enforce_csrf_checks=True)
    client.credentials(HTTP_AUTHORIZATION=f"Token {create_token(user)[1]}")

    response = client.post("/api/workflows/", {"name": "Scripted"})

    assert response.status_code == 201


def test_user_without_organization_sees_nothing_and_cannot_create(workflow):
    loner = token_client(make_user("lone"))

    listed = loner.get("/api/workflows/")
    created = loner.post("/api/workflows/", {"name": "Orphan"})

    assert listed.json()["count"] == 0
    assert created.status_code == 400
    assert "organization" in created.json()
    assert not Workflow.objects.filter(name="Orphan").exists()


@pytest.mark.parametrize("key", ["a\x00b", "x" * 41, "not-a-token!", "é" * 10, "ks_" + "0" * 63])
@pytest.mark.parametrize("path", ["/api/workflows/", "/api/schema/?format=json"])
def test_a_key_that_cannot_be_a_token_is_401_before_the_token_table_is_read(anonymous, key, path):
    anonymous.credentials(HTTP_AUTHORIZATION=f"Token {key}")

    with CaptureQueriesContext(connection) as queries:
        response = anonymous.get(path)

    assert response.status_code == 401
    assert response.json()["code"] == "AUTHENTICATION_FAILED"
    assert not [q for q in queries if "api_token" in q["sql"]]  # only the failure counter was touched
