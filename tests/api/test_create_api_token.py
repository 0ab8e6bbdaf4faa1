"""manage.py create_api_token <username>: prints a new token that authenticates as that user."""

from __future__ import annotations

from io import StringIO

import pytest
from django.core.management import CommandError, call_command

from keeperstate.accounts.models import ApiToken
from tests.api.conftest import json_client
from tests.factories import make_user

pytestmark = pytest.mark.django_db


def run(*args: str) -> str:
    out = StringIO()
    call_command("create_api_token", *args, stdout=out)
    return out.getvalue().strip()


def status_with(token: str) -> int:
    client = json_client()
    client.credentials(HTTP_AUTHORIZATION=f"Token {token}")
    return client.get("/api/workflows/").status_code


def test_printed_token_authenticates_as_the_user(user, workflow):
    token = run("alice")
    client = json_client()
    client.credentials(HTTP_AUTHORIZATION=f"Token {token}")

    response = client.get("/api/workflows/")

    assert response.status_code == 200
    assert response.json()["results"][0]["createdBy"] == "alice"


def test_each_run_prints_a_new_token_and_both_work(user):
    first, second = run("alice"), run("alice")

    assert first != second
    assert status_with(first) == status_with(second) == 200


def test_regenerate_revokes_the_tokens_of_that_name(user):
    old = run("alice", "--name", "ci")
    kept = run("alice", "--name", "laptop")

    new = run("alice", "--name", "ci", "--regenerate")

    assert status_with(old) == 401
    assert status_with(kept) == status_with(new) == 200


def test_the_database_holds_a_digest_and_a_prefix_not_the_token(user):
    token = run("alice", "--name", "ci", "--days", "7")

    row = ApiToken.objects.get(user=user)
    stored = [str(value) for value in row.__dict__.values()]
    assert token.startswith("ks_")
    assert len(token) == 67
    assert not any(token in value for value in stored)
    assert row.token_key == token[:15]
    assert row.name == "ci"
    assert 6 <= (row.expiry - row.created).days <= 7


def test_no_expiry_makes_a_token_that_does_not_expire(user):
    run("alice", "--no-expiry")

    assert ApiToken.objects.get(user=user).expiry is None


def test_unknown_user_is_an_error():
    with pytest.raises(CommandError, match="No user 'nobody'"):
        run("nobody")


def test_inactive_user_gets_no_token(org):
    user = make_user("gone", org)
    user.is_active = False
    user.save()

    with pytest.raises(CommandError, match="inactive"):
        run("gone")
