"""The API's side of the runs issue: async execute, Idempotency-Key, active, webhook secret."""

from __future__ import annotations

import pytest

from keeperstate.executions.models import WorkflowExecution
from tests.api.conftest import json_client, token_client
from tests.executions.graphs import counter_graph
from tests.factories import make_workflow

pytestmark = pytest.mark.django_db


@pytest.fixture
def api(user):
    return token_client(user)


@pytest.fixture
def client_as_alice_api(user):
    """Alice in the browser: the API with a session, as the editor calls it."""
    client = json_client()
    client.force_login(user)
    return client


@pytest.fixture
def counter(org, user):
    nodes, edges = counter_graph("Schedule", interval=60)
    return make_workflow(org, name="Counter", user=user, nodes=nodes, edges=edges)


def test_execute_async_answers_202_with_the_queued_execution(api, counter):
    response = api.post(f"/api/workflows/{counter.id}/execute/?async=true", {"input": {"n": 1}})

    assert response.status_code == 202
    body = response.json()
    assert (body["status"], body["trigger"], body["startedAt"]) == ("queued", "api", None)
    # the input as given, and (a Schedule workflow run by hand) the tick's fields as now
    assert body["input"] == {"n": 1, "scheduledFor": body["input"]["scheduledFor"], "firedAt": body["input"]["firedAt"]}
    assert WorkflowExecution.objects.get(pk=body["id"]).status == "queued"


def test_execute_with_a_repeated_idempotency_key_returns_the_first_execution(api, counter):
    first = api.post(f"/api/workflows/{counter.id}/execute/", {"input": {}}, HTTP_IDEMPOTENCY_KEY="abc")
    again = api.post(f"/api/workflows/{counter.id}/execute/", {"input": {}}, HTTP_IDEMPOTENCY_KEY="abc")

    assert (first.status_code, again.status_code) == (201, 200)
    assert again.json()["id"] == first.json()["id"]
    assert again["Idempotent-Replayed"] == "true"
    assert counter.executions.count() == 1


def test_execute_refuses_a_bad_idempotency_key(api, counter):
    response = api.post(f"/api/workflows/{counter.id}/execute/", {"input": {}}, HTTP_IDEMPOTENCY_KEY="x" * 201)

    assert response.status_code == 400
    assert response.json()["code"] == "IDEMPOTENCY_KEY_INVALID"
    assert counter.executions.count() == 0


def test_a_workflow_shows_active_next_run_and_webhook(api, counter):
    body = api.get(f"/api/workflows/{counter.id}/").json()

    assert (body["active"], body["nextRunAt"]) == (False, None)
    assert body["webhookUrl"] == f"/hooks/{counter.id}/"
    assert len(body["webhookSecret"]) >= 32


def test_patch_active_schedules_the_workflow(api, counter):
    response = api.patch(f"/api/workflows/{counter.id}/", {"active": True})

    assert response.status_code == 200
    assert response.json()["active"] is True
    assert response.json()["nextRunAt"] is not None
    listed = api.get("/api/workflows/").json()["results"][0]
    assert (listed["active"], listed["nextRunAt"]) == (True, response.json()["nextRunAt"])


def test_a_bad_schedule_is_refused_at_save_with_its_field(api, counter):
    nodes, edges = counter_graph("Schedule", interval=3)

    response = api.patch(f"/api/workflows/{counter.id}/", {"nodes": nodes, "edges": edges})

    assert response.status_code == 400
    errors = response.json()["details"]["errors"]
    assert [(e["nodeId"], e["field"], e["code"]) for e in errors] == [("trigger", "interval", "SCHEDULE_INVALID")]


@pytest.mark.parametrize("interval", ["²", "٣٠", "３０", "1e2", "60.5"])
def test_an_interval_that_is_not_ascii_digits_is_a_coded_400(api, org, interval):
    # "²" passes str.isdigit() (then int() raised: a 500), and int() reads "٣٠" as 30
    nodes, edges = counter_graph("Schedule", interval=interval)

    response = api.post("/api/workflows/", {"name": "Ticks", "nodes": nodes, "edges": edges})

    assert response.status_code == 400
    errors = response.json()["details"]["errors"]
    assert [(e["nodeId"], e["field"], e["code"]) for e in errors] == [("trigger", "interval", "SCHEDULE_INVALID")]


def test_an_interval_is_stored_as_the_same_number_whatever_the_way_in(api, client_as_alice_api, counter):
    nodes, edges = counter_graph("Schedule", interval=" 3600 ")  # text with spaces, as a client sent it
    as_number, _ = counter_graph("Schedule", interval=3600)

    by_token = api.patch(f"/api/workflows/{counter.id}/", {"nodes": nodes, "edges": edges}).json()
    by_session = client_as_alice_api.patch(f"/api/workflows/{counter.id}/", {"nodes": as_number, "edges": edges}).json()

    assert by_token["nodes"][0]["data"]["config"]["interval"] == 3600
    assert by_session["nodes"][0]["data"]["config"]["interval"] == 3600


def test_rotating_the_webhook_secret_replaces_it(api, counter):
    old = counter.webhook_secret

    response = api.post(f"/api/workflows/{counter.id}/webhook-secret/")

    assert response.status_code == 200
    counter.refresh_from_db()
    assert response.json() == {"webhookSecret": counter.webhook_secret}
    assert counter.webhook_secret != old


def test_another_organizations_secret_cannot_be_rotated(api, foreign_workflow):
    assert api.post(f"/api/workflows/{foreign_workflow.id}/webhook-secret/").status_code == 404


def test_the_catalogue_lists_the_schedule_trigger_with_its_fixed_output(api):
    triggers = {t["id"]: t for t in api.get("/api/actions/").json()["triggers"]}

    assert set(triggers) == {"Manual", "Webhook", "Schedule"}
    assert [f["name"] for f in triggers["Schedule"]["outputFields"]] == ["scheduledFor", "firedAt"]
    assert [f["name"] for f in triggers["Schedule"]["configFields"]] == ["interval", "cron", "timezone", "overlap"]


def test_the_schedule_help_names_the_deployments_shortest_interval(api, settings):
    settings.KEEPERSTATE_MIN_INTERVAL = 30

    triggers = {t["id"]: t for t in api.get("/api/actions/").json()["triggers"]}
    interval = next(f for f in triggers["Schedule"]["configFields"] if f["name"] == "interval")

    assert "(at least 30)" in interval["help"]
