"""API tokens: hashed at rest, shown once, named, expiring, revocable from the API."""

from __future__ import annotations

from datetime import timedelta

import pytest
from django.db import connection
from django.utils import timezone

from keeperstate.accounts.models import ApiToken
from keeperstate.accounts.tokens import create_token
from keeperstate.audit.models import AuditEvent
from tests.api.conftest import json_client, token_client
from tests.factories import make_user

pytestmark = pytest.mark.django_db


def with_token(token: str):
    client = json_client()
    client.credentials(HTTP_AUTHORIZATION=f"Token {token}")
    return client


def test_creating_a_token_shows_it_once_and_lists_only_its_name_and_prefix(user):
    api = token_client(user)

    created = api.post("/api/tokens/", {"name": "CI deploy", "expiresInDays": 30})
    listed = api.get("/api/tokens/")

    assert created.status_code == 201, created.json()
    token = created.json()["token"]
    assert created.json()["name"] == "CI deploy"
    assert created.json()["prefix"] == token[:15]
    assert token not in listed.content.decode()
    assert {t["name"] for t in listed.json()} == {"CI deploy", "tests"}
    assert with_token(token).get("/api/workflows/").status_code == 200


def test_a_token_row_holds_no_usable_key(user):
    _, token = create_token(user, name="probe")

    with connection.cursor() as cursor:
        cursor.execute("SELECT * FROM api_token")
        rows = cursor.fetchall()
    stored = " ".join(str(value) for row in rows for value in row)
    assert token not in stored
    assert token[15:] not in stored  # not even the secret part after the prefix
    # The stored digest itself is not a token: sending it authenticates nobody.
    digest = ApiToken.objects.get(name="probe").digest
    assert with_token(digest).get("/api/workflows/").status_code == 401


def test_a_revoked_token_is_refused(user):
    api = token_client(user)
    created = api.post("/api/tokens/", {"name": "laptop"}).json()

    revoked = api.delete(f"/api/tokens/{created['prefix']}/")

    assert revoked.status_code == 204
    assert with_token(created["token"]).get("/api/workflows/").status_code == 401
    assert AuditEvent.objects.filter(action="token.revoke", target_id=created["prefix"]).exists()


def test_an_expired_token_is_refused(user):
    row, token = create_token(user, name="old", expires_in_days=1)
    ApiToken.objects.filter(pk=row.pk).update(expiry=timezone.now() - timedelta(seconds=1))

    response = with_token(token).get("/api/workflows/")

    assert response.status_code == 401
    assert response.json()["code"] == "AUTHENTICATION_FAILED"


def test_tokens_expire_by_default_and_may_be_made_permanent(user, settings):
    api = token_client(user)

    default = api.post("/api/tokens/", {"name": "default"}).json()
    permanent = api.post("/api/tokens/", {"name": "forever", "expiresInDays": None}).json()

    assert default["expiresAt"] is not None
    assert permanent["expiresAt"] is None


def test_another_users_token_cannot_be_revoked_or_seen(user, org):
    other_row, other_token = create_token(make_user("mallory", org), name="theirs")
    api = token_client(user)

    listed = api.get("/api/tokens/").json()
    revoked = api.delete(f"/api/tokens/{other_row.token_key}/")

    assert "theirs" not in {t["name"] for t in listed}
    assert revoked.status_code == 404
    assert with_token(other_token).get("/api/workflows/").status_code == 200


@pytest.mark.parametrize(
    ("body", "field"),
    [({"name": "a\u202eb"}, "name"), ({"name": 5}, "name"), ({"expiresInDays": 0}, "expiresInDays")],
)
def test_bad_token_requests_are_field_errors(user, body, field):
    response = token_client(user).post("/api/tokens/", body)

    assert response.status_code == 400
    assert field in str(response.json())


def test_creating_a_token_is_audited_without_the_token(user):
    token = token_client(user).post("/api/tokens/", {"name": "audited"}).json()["token"]

    event = AuditEvent.objects.get(action="token.create", details__name="audited")
    assert event.actor_name == "alice"
    assert token not in str(event.details)
    assert token not in event.target_id


def test_a_plain_drf_token_is_carried_over_hashed_and_keeps_working(user):
    # given a row in the old plain-text table, as a deployment before this change has
    from importlib import import_module

    from django.apps import apps as global_apps
    from django.db import connection as conn

    key = "0123456789abcdef0123456789abcdef01234567"
    with conn.cursor() as cursor:
        cursor.execute("CREATE TABLE IF NOT EXISTS authtoken_token (key varchar(40) PRIMARY KEY, "
                       "user_id integer, created timestamptz)")
        cursor.execute("INSERT INTO authtoken_token VALUES (%s, %s, now())", [key, user.pk])
    migration = import_module("keeperstate.migrations.0010_carry_over_drf_tokens")

    # when the data migration runs
    with conn.schema_editor() as editor:
        migration.carry_over(global_apps, editor)

    # then the key authenticates, and no table holds it
    assert with_token(key).get("/api/workflows/").status_code == 200
    with conn.cursor() as cursor:
        cursor.execute("SELECT count(*) FROM authtoken_token")
        assert cursor.fetchone()[0] == 0


def test_a_request_reads_only_the_token_it_presents_and_housekeeping_deletes_expired_ones(user):
    from django.test.utils import CaptureQueriesContext

    from keeperstate.executions.housekeeping import housekeeping

    _row, token = create_token(user, name="in use", expires_in_days=30)
    expired = [create_token(user, name=f"old {n}", expires_in_days=1)[0].pk for n in range(10)]
    ApiToken.objects.filter(pk__in=expired).update(expiry=timezone.now() - timedelta(seconds=1))
    for n in range(10):
        create_token(user, name=f"live {n}", expires_in_days=30 if n % 2 else None)

    with CaptureQueriesContext(connection) as queries:
        assert with_token(token).get("/api/workflows/").status_code == 200

    token_reads = [q["sql"] for q in queries.captured_queries if '"api_token"' in q["sql"]]
    assert len(token_reads) == 1  # the presented token's row, not all of the user's tokens
    assert ApiToken.objects.filter(pk__in=expired).count() == 10

    assert housekeeping()["tokens_expired"] == 10
    assert ApiToken.objects.filter(user=user).count() == 11  # the one in use and the 10 live ones
    assert with_token(token).get("/api/workflows/").status_code == 200
