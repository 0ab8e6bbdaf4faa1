"""The webhook's answers, with no worker running (runs stay queued): tests/workers runs them."""

from __future__ import annotations

import json

import pytest

from keeperstate.executions.models import WorkflowExecution
from tests.api.conftest import json_client
from tests.executions.graphs import counter_graph
from tests.factories import make_workflow

pytestmark = pytest.mark.django_db


@pytest.fixture
def hooked(org, user):
    nodes, edges = counter_graph("Webhook")
    workflow = make_workflow(org, name="Hooked", user=user, nodes=nodes, edges=edges)
    workflow.active = True
    workflow.save()
    return workflow


@pytest.fixture
def client():
    return json_client()


def post(client, workflow, body=None, *, secret=None, raw=None, content_type="application/json", query="", **headers):
    secret = workflow.webhook_secret if secret is None else secret
    data = raw if raw is not None else json.dumps(body if body is not None else {})
    return client.generic(
        "POST", f"/hooks/{workflow.id}/{query}", data, content_type=content_type,
        HTTP_X_KEEPERSTATE_SECRET=secret, **headers,
    )


def test_a_webhook_queues_a_run_with_the_body_as_input(client, hooked):
    response = post(client, hooked, {"block": 7})

    assert response.status_code == 202
    execution = WorkflowExecution.objects.get(pk=response.json()["executionId"])
    assert response.json() == {"executionId": str(execution.id), "status": "queued"}
    assert (execution.trigger, execution.input, execution.triggered_by) == ("webhook", {"block": 7}, None)


def test_an_empty_body_is_an_empty_input(client, hooked):
    response = client.post(f"/hooks/{hooked.id}/", HTTP_X_KEEPERSTATE_SECRET=hooked.webhook_secret)

    assert response.status_code == 202
    assert WorkflowExecution.objects.get().input == {}


@pytest.mark.parametrize("length", ["²", "abc"])
def test_a_content_length_that_is_no_whole_number_counts_as_none(client, hooked, length):
    # int() raised on both (a 500); the one whole-number parser reads neither, as Django and DRF do not
    response = post(client, hooked, raw="", content_type="", CONTENT_LENGTH=length)

    assert response.status_code == 202
    assert WorkflowExecution.objects.get().input == {}


def not_found_answers(client, workflow):
    import uuid

    wrong = post(client, workflow, {}, secret="wrong")
    missing = client.post(f"/hooks/{workflow.id}/", "{}", content_type="application/json")
    unknown = client.generic(
        "POST", f"/hooks/{uuid.uuid4()}/", "{}", content_type="application/json",
        HTTP_X_KEEPERSTATE_SECRET=workflow.webhook_secret,
    )
    return [(r.status_code, r.json()) for r in (wrong, missing, unknown)]


def test_wrong_missing_and_unknown_all_answer_the_same_404(client, hooked):
    answers = not_found_answers(client, hooked)

    assert len({json.dumps(a) for a in answers}) == 1
    assert answers[0][0] == 404
    assert answers[0][1]["code"] == "NOT_FOUND"
    assert WorkflowExecution.objects.count() == 0


def test_an_inactive_or_deleted_workflow_answers_the_same_404(client, hooked):
    hooked.active = False
    hooked.save()
    inactive = post(client, hooked, {})
    hooked.active = True
    hooked.save()
    hooked.soft_delete()
    deleted = post(client, hooked, {})

    assert (inactive.status_code, deleted.status_code) == (404, 404)
    assert inactive.json() == deleted.json() == not_found_answers(client, hooked)[0][1]


def test_a_body_over_256_kb_is_413(client, hooked):
    response = post(client, hooked, raw=json.dumps({"blob": "x" * 300_000}))

    assert response.status_code == 413
    assert WorkflowExecution.objects.count() == 0


@pytest.mark.parametrize("content_type", ["text/plain", "application/x-www-form-urlencoded", ""])
def test_a_body_that_is_not_json_is_415(client, hooked, content_type):
    response = post(client, hooked, raw="block=7", content_type=content_type)

    assert response.status_code == 415
    assert WorkflowExecution.objects.count() == 0


@pytest.mark.parametrize("raw", ["[1, 2]", '"text"', "{bad", '{"n": NaN}', '{"n": 1e400}', '{"s": "\\ud800"}'])
def test_a_json_body_that_is_not_a_usable_object_is_400(client, hooked, raw):
    response = post(client, hooked, raw=raw)

    assert response.status_code == 400
    assert response.json()["code"] in {"INPUT_INVALID", "PARSE_ERROR"}
    assert WorkflowExecution.objects.count() == 0


def test_a_repeated_idempotency_key_answers_the_first_execution(client, hooked):
    first = post(client, hooked, {"n": 1}, HTTP_IDEMPOTENCY_KEY="delivery-1")
    again = post(client, hooked, {"n": 1}, HTTP_IDEMPOTENCY_KEY="delivery-1")

    assert first.json()["executionId"] == again.json()["executionId"]
    assert WorkflowExecution.objects.count() == 1


@pytest.mark.parametrize("query", ["?wait=0", "?wait=31", "?wait=soon"])
def test_wait_takes_1_to_30_seconds(client, hooked, query):
    response = post(client, hooked, {}, query=query)

    assert response.status_code == 400
    assert "wait" in response.json()
    assert WorkflowExecution.objects.count() == 0


@pytest.mark.django_db(transaction=True)
def test_a_waited_webhook_runs_in_the_web_process_and_answers_the_finished_run(client, hooked):
    response = post(client, hooked, {"block": 3}, query="?wait=5")

    assert response.status_code == 200
    assert (response.json()["status"], response.json()["input"]) == ("success", {"block": 3})
    assert WorkflowExecution.objects.get().status == "success"  # no worker ran: the web process did


@pytest.fixture
def slow_runs(monkeypatch):
    """Each run takes 1.5 s before its graph starts."""
    import time

    from keeperstate.executions import service

    real = service.run_graph

    def slow(*args, **kwargs):
        time.sleep(1.5)
        return real(*args, **kwargs)

    monkeypatch.setattr(service, "run_graph", slow)


@pytest.mark.django_db(transaction=True)
def test_wait_answers_202_when_the_run_does_not_finish_in_time_and_the_run_goes_on(client, hooked, slow_runs):
    from tests.workers.processes import wait_until

    response = post(client, hooked, {}, query="?wait=1")

    assert response.status_code == 202
    assert response.json()["status"] == "running"
    execution = WorkflowExecution.objects.get(pk=response.json()["executionId"])
    wait_until(lambda: WorkflowExecution.objects.get(pk=execution.pk).status == "success", 10, "the run to end")


@pytest.mark.django_db(transaction=True)
def test_a_waited_webhook_is_queued_for_a_worker_when_the_pool_is_busy(client, hooked, monkeypatch):
    from keeperstate.executions import inprocess

    monkeypatch.setattr(inprocess, "reserve", lambda: False)

    response = post(client, hooked, {}, query="?wait=1")

    assert response.status_code == 202
    assert response.json()["status"] == "queued"  # no worker runs here; a worker would take it


@pytest.mark.django_db(transaction=True)
def test_a_waited_run_ending_as_its_caller_stops_waiting_is_answered_and_recorded_once(client, hooked, monkeypatch):
    import time

    from keeperstate.executions import service
    from tests.workers.processes import wait_until

    real_end = service.end

    def slow_end(execution, **options):  # the run has its outcome, and writes it after the caller gave up
        time.sleep(1.5)
        return real_end(execution, **options)

    monkeypatch.setattr(service, "end", slow_end)

    response = post(client, hooked, {}, query="?wait=1")

    assert response.status_code == 202
    assert response.json()["status"] == "running"
    execution = WorkflowExecution.objects.get(pk=response.json()["executionId"])  # findable at once
    assert execution.status == "running"
    wait_until(lambda: WorkflowExecution.objects.get(pk=execution.pk).status == "success", 10, "the run to end")
    assert WorkflowExecution.objects.count() == 1
