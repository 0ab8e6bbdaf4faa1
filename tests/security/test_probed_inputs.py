"""The inputs an attacker's probe found still breaking something (issue 20, items 1–5 and 7), each
sent as the probe sent it. Item 6 (serve's own address) is tests/security/test_egress_paths.py."""

from __future__ import annotations

import pytest
from axes.models import AccessAttempt
from django.db import connection
from django.test import Client

from keeperstate.accounts.models import ApiToken
from keeperstate.accounts.tokens import create_token
from keeperstate.core.errors import CodedError
from keeperstate.executions.service import run_workflow
from keeperstate.secrets.models import OrganizationSecret
from keeperstate.secrets.store import secret_put
from keeperstate.state.models import WorkflowState
from keeperstate.workflows.models import Workflow
from keeperstate.workflows.services import workflow_create
from tests.api.conftest import json_client, token_client
from tests.egress.test_http_request import chain
from tests.factories import make_user, make_workflow

pytestmark = pytest.mark.django_db

VALUE = "sk-live-7e3c1d9b2a"
SECRET = "<<@__secrets:Secrets.API_KEY>>"


@pytest.fixture
def api_key(org):
    return secret_put(organization=org, name="API_KEY", value=VALUE)[0]


def rows_holding(text: str) -> dict[str, int]:
    """Every table of the schema whose rows, as text, contain ``text``: the whole database read."""
    found = {}
    with connection.cursor() as cursor:
        cursor.execute("SELECT tablename FROM pg_tables WHERE schemaname = current_schema()")
        for (table,) in cursor.fetchall():
            cursor.execute(f'SELECT count(*) FROM "{table}" t WHERE strpos(t::text, %s) > 0', [text])
            if count := cursor.fetchone()[0]:
                found[table] = count
    return found


# --- 1. no stored text holds a resolved secret -----------------------------------------------

@pytest.mark.parametrize(
    ("action", "config"),
    [
        ("State Set", {"key": SECRET, "value": 1}),
        ("State Set", {"key": f"seen:{SECRET}", "value": 1}),
        ("State Increment", {"key": SECRET}),
        ("State Delete", {"key": SECRET}),
        ("State Get", {"key": SECRET}),
    ],
)
def test_a_state_key_holding_a_secret_is_refused_and_nothing_stores_it(api_key, org, user, action, config):
    nodes, edges = chain(("state", "State", {"actionType": action, **config}))
    workflow = make_workflow(org, user=user, nodes=nodes, edges=edges)

    execution = run_workflow(workflow, {})

    # a graph stored unvalidated (make_workflow): the run refuses the secret where it stands
    assert execution.node_results["state"]["code"] == "SECRET_NOT_ALLOWED_HERE"
    assert "secret" in execution.node_results["state"]["error"]
    assert not WorkflowState.objects.exists()
    assert rows_holding(VALUE) == {}


def test_a_secret_flowing_through_every_stored_field_of_a_run_is_nowhere_in_the_database(api_key, org, user):
    # given: the secret in Set Fields output (kept in the run's results) and in a state key built
    # from it, and the run input carrying a secret reference as plain text
    nodes, edges = chain(
        ("fields", "Fields", {"actionType": "Set Fields", "fields": f"auth = {SECRET}"}),
        ("save", "Save", {"actionType": "State Set", "key": "<<@fields:Fields.auth>>", "value": 1}),
    )

    # then: no way in saves it (a secret stands only where it leaves the run)...
    with pytest.raises(CodedError) as refused:
        workflow_create(organization=org, user=user, name="Leaky", nodes=nodes, edges=edges)
    assert refused.value.details["errors"][0]["code"] == "SECRET_NOT_ALLOWED_HERE"

    # ...and stored by a path that skips validation, its run refuses it before reading it
    workflow = make_workflow(org, user=user, nodes=nodes, edges=edges)
    execution = run_workflow(workflow, {"note": SECRET})

    assert execution.node_results["fields"]["code"] == "SECRET_NOT_ALLOWED_HERE"
    assert not WorkflowState.objects.exists()
    execution.refresh_from_db()
    assert execution.input == {"note": SECRET}  # the input is never resolved
    assert rows_holding(VALUE) == {}


def test_names_and_labels_refuse_a_secret(api_key, user):
    api = token_client(user)
    created = api.post("/api/workflows/", {"name": f"Monitor {SECRET}", "nodes": [], "edges": []}, format="json")
    labelled = api.post("/api/workflows/validate/", {"nodes": [
        {"id": "trigger", "type": "trigger", "data": {"label": SECRET, "type": "trigger",
                                                       "config": {"triggerType": "Manual"}}}], "edges": []},
        format="json")

    assert created.status_code == 400
    assert (created.json()["code"], created.json()["field"]) == ("SECRET_NOT_ALLOWED_HERE", "name")
    assert not Workflow.objects.exists()
    codes = {(e["field"], e["code"]) for e in labelled.json()["errors"]}
    assert {("label", "INVALID_LABEL"), ("label", "SECRET_NOT_ALLOWED_HERE")} <= codes
    assert rows_holding(VALUE) == {}


# --- 2. a multipart body to a JSON endpoint of the editor ---------------------------------------

@pytest.mark.parametrize(
    ("method", "path"),
    [("post", "/api/workflows/references/"), ("patch", "/api/workflows/{wf}/"), ("post", "/api/workflows/validate/"),
     ("post", "/api/workflows/{wf}/execute/")],
)
def test_a_multipart_body_to_an_editor_json_endpoint_is_415(user, monitor, method, path):
    # The browser's client: the CSRF check parses the multipart form before the view reads it.
    client = Client(enforce_csrf_checks=True)
    client.force_login(user)
    client.get("/builder/")
    token = client.cookies["csrftoken"].value
    from django.test.client import BOUNDARY, MULTIPART_CONTENT, encode_multipart

    body = encode_multipart(BOUNDARY, {"csrfmiddlewaretoken": token, "nodes": "[]"})
    response = client.generic(method.upper(), path.format(wf=monitor.id), body, content_type=MULTIPART_CONTENT,
                              HTTP_X_CSRFTOKEN=token)

    assert response.status_code == 415
    assert response.json()["code"] == "UNSUPPORTED_MEDIA_TYPE"


# --- 3. NUL in a path or query parameter ----------------------------------------------------

@pytest.mark.parametrize(
    ("method", "path"),
    [("get", "/api/audit/?action=%00"), ("get", "/api/audit/?organization=i%00"),
     ("delete", "/api/tokens/%00/"), ("get", "/api/workflows/?search=%00"), ("get", "/hooks/%00/")],
)
def test_nul_in_an_api_path_or_query_is_a_coded_400_not_a_database_outage(user, method, path):
    owner = make_user("olga", user.memberships.first().organization, role="owner")
    create_token(owner, name="keep")
    response = getattr(token_client(owner), method)(path)

    assert response.status_code == 400
    assert response.json()["code"] == "BAD_REQUEST"
    assert "Retry-After" not in response
    assert ApiToken.objects.filter(name="keep").exists()


def test_nul_in_a_builder_path_is_the_400_page_and_deletes_nothing(client_as_alice, org, api_key):
    response = client_as_alice.post(f"/builder/secrets/{org.id}/%00/delete/")

    assert response.status_code == 400
    assert "Retry-After" not in response
    assert OrganizationSecret.objects.filter(name="API_KEY").exists()


# --- 4. a login username over 255 characters --------------------------------------------------

@pytest.mark.parametrize("page", ["/accounts/login/", "/admin/login/"])
def test_a_very_long_username_is_a_failed_login_and_is_recorded(client, page, settings):
    settings.AXES_FAILURE_LIMIT = 3
    long_name = "x" * 300

    answers = [client.post(page, {"username": long_name, "password": "y"}, REMOTE_ADDR="10.4.4.4")
               for _ in range(4)]

    # (axes locks on the failure that reaches the limit)
    assert [a.status_code for a in answers] == [200, 200, 429, 429]
    assert "correct username and password" in answers[0].content.decode()
    attempt = AccessAttempt.objects.get()
    assert attempt.username == "x" * 255
    assert attempt.failures_since_start >= 3


# --- 5. Schedule intervals written in other digits ---------------------------------------------

@pytest.mark.parametrize("interval", ["²", "٣٠", "30\x00", "１２０"])
def test_an_interval_in_non_ascii_digits_is_refused_on_create(user, interval):
    trigger = {"id": "trigger", "type": "trigger", "position": {"x": 0, "y": 0},
               "data": {"label": "Trigger", "type": "trigger",
                        "config": {"triggerType": "Schedule", "interval": interval}}}

    response = token_client(user).post("/api/workflows/", {"name": "Every", "nodes": [trigger], "edges": []},
                                       format="json")

    assert response.status_code == 400
    assert "SCHEDULE_INVALID" in str(response.json()) or "U+0000" in str(response.json())
    assert not Workflow.objects.filter(name="Every").exists()


# --- 7. the smaller ones --------------------------------------------------------------------

def test_the_lockout_page_says_minutes_and_sends_retry_after(client, user, settings):
    settings.AXES_FAILURE_LIMIT = 1
    client.post("/accounts/login/", {"username": "alice", "password": "wrong"})

    locked = client.post("/accounts/login/", {"username": "alice", "password": "pw-alice"})

    assert locked.status_code == 429
    assert locked["Retry-After"] == str(15 * 60)
    page = locked.content.decode()
    assert "try again in 15 minutes" in page
    assert "PT15M" not in page


def test_unauthenticated_requests_answered_401_count_against_the_anonymous_rate(settings):
    settings.REST_FRAMEWORK = {**settings.REST_FRAMEWORK, "DEFAULT_THROTTLE_RATES": {
        **settings.REST_FRAMEWORK["DEFAULT_THROTTLE_RATES"], "api_anon": "5/min"}}
    client = json_client()

    answers = [client.get("/api/actions/", REMOTE_ADDR="10.5.5.5") for _ in range(7)]

    assert [a.status_code for a in answers] == [401] * 5 + [429] * 2
    assert answers[5].json()["code"] == "THROTTLED"
    assert int(answers[5]["Retry-After"]) >= 1


@pytest.mark.parametrize("page", ["accessattempt", "accesslog", "accessfailurelog"])
def test_login_records_are_for_superusers_only(org, page):
    from django.contrib.auth.models import Permission

    staff = make_user("ada", org, role="owner")
    staff.is_staff = True
    staff.save()
    staff.user_permissions.set(Permission.objects.filter(content_type__app_label="axes"))
    superuser = make_user("root")
    superuser.is_staff = superuser.is_superuser = True
    superuser.save()
    as_staff, as_superuser = Client(), Client()
    as_staff.force_login(staff)
    as_superuser.force_login(superuser)

    assert as_staff.get(f"/admin/axes/{page}/").status_code == 403
    assert "Access attempts" not in as_staff.get("/admin/").content.decode()
    assert as_superuser.get(f"/admin/axes/{page}/").status_code == 200


@pytest.mark.parametrize(
    ("body", "content_type", "status"),
    [(b"{bad", "application/json", 400), (b'{"a": "\\u0000"}', "application/json", 400),
     (b"\x00", "application/json", 400), (b"x" * (5 * 1024 * 1024), "application/json", 413),
     (b"rotate", "text/plain", 415), (b"[]", "application/json", 400)],
)
def test_rotating_the_webhook_secret_reads_its_body_first(user, monitor, body, content_type, status):
    before = monitor.webhook_secret

    response = token_client(user).generic("POST", f"/api/workflows/{monitor.id}/webhook-secret/", body,
                                          content_type=content_type)

    assert response.status_code == status
    assert "code" in response.json()
    monitor.refresh_from_db()
    assert monitor.webhook_secret == before


@pytest.mark.parametrize("body", [b"", b"{}"])
def test_rotating_the_webhook_secret_with_no_body_or_an_empty_object_rotates(user, monitor, body):
    before = monitor.webhook_secret

    response = token_client(user).generic("POST", f"/api/workflows/{monitor.id}/webhook-secret/", body,
                                          content_type="application/json")

    assert response.status_code == 200
    monitor.refresh_from_db()
    assert monitor.webhook_secret == response.json()["webhookSecret"] != before


# --- found by the fuzz tier's nightly profile ------------------------------------------------

def test_a_state_value_with_a_lone_surrogate_is_refused_with_a_code():
    from keeperstate.engine.actions.state_set import VALUE_FIELD
    from keeperstate.state.errors import StateInvalidValue

    with pytest.raises(StateInvalidValue, match="surrogate"):
        VALUE_FIELD.parse(["\ud800"])
