"""manage.py create_api_token <username>: prints a token that authenticates as that user."""

from __future__ import annotations

from io import StringIO

import pytest
from django.core.management import CommandError, call_command

from tests.api.conftest import json_client
from tests.factories import make_user

pytestmark = pytest.mark.django_db


def run(*args: str) -> str:
    out = StringIO()
    call_command("create_api_token", *args, stdout=out)
    return out.getvalue().strip()


def test_printed_token_authenticates_as_the_user(user, workflow):
    token = run("alice")
    client = json_client()
    client.credentials(HTTP_AUTHORIZATION=f"Token {token}")

    response = client.get("/api/workflows/")

    assert response.status_code == 200
    assert response.json()["results"][0]["createdBy"] == "alice"


def test_running_it_again_prints_the_same_token(user):
    assert run("alice") == run("alice")


def test_regenerate_replaces_the_token(user):
    old = run("alice")

    new = run("alice", "--regenerate")

    assert new != old
    client = json_client()
    client.credentials(HTTP_AUTHORIZATION=f"Token {old}")
    assert client.get("/api/workflows/").status_code == 401


def test_unknown_user_is_an_error():
    with pytest.raises(CommandError, match="No user 'nobody'"):
        run("nobody")


def test_inactive_user_gets_no_token(org):
    user = make_user("gone", org)
    user.is_active = False
    user.save()

    with pytest.raises(CommandError, match="inactive"):
        run("gone")
