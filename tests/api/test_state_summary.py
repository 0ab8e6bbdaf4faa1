"""GET /api/workflows/<id>/state-summary/ and …/state-history/?key=: the editor's read-only State panel,
after real writes."""

from __future__ import annotations

import json

import pytest
from django.conf import settings

from keeperstate.executions.service import run_workflow
from keeperstate.state.maintenance import admin_update
from keeperstate.state.models import WorkflowState
from keeperstate.state.store import StateScope, state_delete, state_increment, state_set
from tests.state.test_store import expire

pytestmark = pytest.mark.django_db


def state_url(workflow, key=None):
    """The panel's read: the summary, or one key's history."""
    if key is None:
        return f"/api/workflows/{workflow.id}/state-summary/"
    return f"{history_url(workflow)}?key={key}"


def history_url(workflow):
    return f"/api/workflows/{workflow.id}/state-history/"


def scope_of(workflow):
    return StateScope(organization_id=workflow.organization_id, workflow_id=workflow.id)


def test_two_runs_show_the_cursor_its_history_and_the_usage(client_as_alice, monitor):
    # given the block monitor run twice
    first = run_workflow(monitor, {"block": 100})
    second = run_workflow(monitor, {"block": 101})

    # when the panel reads its state
    response = client_as_alice.get(state_url(monitor))

    # then
    assert response.status_code == 200
    assert "no-store" in response["Cache-Control"]  # never kept by a cache, like every API answer
    body = response.json()
    [cursor] = body["entries"]
    assert {k: cursor[k] for k in ("key", "value", "version", "expiresAt", "updatedByExecution", "sizeBytes")} == {
        "key": "cursor", "value": 101, "version": 2, "expiresAt": None,
        "updatedByExecution": str(second.id), "sizeBytes": 3,
    }
    assert cursor["updatedAt"]
    update, insert = body["history"]
    assert {k: update[k] for k in ("key", "operation", "oldValue", "newValue", "oldVersion", "newVersion")} == {
        "key": "cursor", "operation": "update", "oldValue": 100, "newValue": 101, "oldVersion": 1, "newVersion": 2,
    }
    assert (update["execution"], update["actor"]) == (str(second.id), None)  # a run's change names its run
    assert (insert["operation"], insert["newValue"], insert["newVersion"], insert["execution"]) == (
        "insert", 100, 1, str(first.id),
    )
    assert body["usage"] == {
        "liveKeys": 1, "maxKeys": settings.KEEPERSTATE_ORG_MAX_KEYS,
        "storedBytes": 3, "maxBytes": settings.KEEPERSTATE_ORG_MAX_BYTES,
    }
    assert body["limits"] == {"keysPerWorkflow": settings.KEEPERSTATE_MAX_KEYS_PER_WORKFLOW}


def test_a_workflow_without_state_answers_empty_lists(client_as_alice, monitor):
    body = client_as_alice.get(state_url(monitor)).json()

    assert (body["entries"], body["history"], body["usage"]["liveKeys"], body["usage"]["storedBytes"]) == ([], [], 0, 0)


def test_entries_are_sorted_by_key_with_expiry_and_the_organizations_usage(client_as_alice, monitor, workflow):
    # given keys in this workflow and in another workflow of the same organization
    scope = scope_of(monitor)
    state_increment(scope=scope, key="hits")
    state_increment(scope=scope, key="hits")
    state_set(scope=scope, key="config", value={"threshold": 5}, ttl=3600)
    state_set(scope=scope_of(workflow), key="elsewhere", value="x")

    body = client_as_alice.get(state_url(monitor)).json()

    assert [(e["key"], e["value"], e["version"]) for e in body["entries"]] == [
        ("config", {"threshold": 5}, 1), ("hits", 2, 2),
    ]
    assert body["entries"][0]["expiresAt"] is not None
    assert body["entries"][1]["updatedByExecution"] is None  # written outside a run
    assert [(h["key"], h["operation"]) for h in body["history"]] == [
        ("config", "insert"), ("hits", "update"), ("hits", "insert"),
    ]
    assert body["usage"]["liveKeys"] == 3  # the organization's budget counts every workflow


def test_an_expired_key_is_not_listed_nor_counted(client_as_alice, monitor):
    scope = scope_of(monitor)
    state_set(scope=scope, key="session", value="abc", ttl=60)
    state_set(scope=scope, key="cursor", value=7)
    expire(scope, "session")

    body = client_as_alice.get(state_url(monitor)).json()

    assert [e["key"] for e in body["entries"]] == ["cursor"]
    assert body["usage"]["liveKeys"] == 1


def test_deletes_and_admin_repairs_are_in_the_history(client_as_alice, monitor):
    scope = scope_of(monitor)
    state_set(scope=scope, key="cursor", value=1)
    state_set(scope=scope, key="lock", value=True)
    state_delete(scope=scope, key="lock")
    admin_update(state_id=WorkflowState.objects.get(key="cursor").pk, value=5, expires_at=None, actor="admin:root")

    body = client_as_alice.get(state_url(monitor)).json()

    assert [e["key"] for e in body["entries"]] == ["cursor"]
    fields = ("key", "operation", "oldValue", "newValue", "actor")
    repair, delete = ([event[f] for f in fields] for event in body["history"][:2])
    assert repair == ["cursor", "update", 1, 5, "admin:root"]
    assert delete == ["lock", "delete", True, None, "database (raw SQL)"]


def test_key_filter_answers_that_keys_history_only(client_as_alice, monitor):
    scope = scope_of(monitor)
    for block in (1, 2, 3):
        state_set(scope=scope, key="cursor", value=block)
    state_increment(scope=scope, key="hits")

    response = client_as_alice.get(state_url(monitor, key="cursor"))

    assert response.status_code == 200
    body = response.json()
    assert set(body) == {"results"}
    assert [(h["key"], h["newVersion"], h["newValue"]) for h in body["results"]] == [
        ("cursor", 3, 3), ("cursor", 2, 2), ("cursor", 1, 1),
    ]


def test_key_filter_of_an_unknown_key_is_empty_and_of_an_invalid_key_a_400(client_as_alice, monitor):
    state_set(scope=scope_of(monitor), key="cursor", value=1)

    unknown = client_as_alice.get(history_url(monitor), {"key": "nope"})
    blank = client_as_alice.get(history_url(monitor), {"key": "  "})

    assert unknown.json() == {"results": []}
    assert blank.status_code == 400
    assert blank.json()["code"] == "STATE_INVALID_KEY"


def test_the_history_holds_at_most_fifty_changes(client_as_alice, monitor):
    scope = scope_of(monitor)
    for n in range(55):
        state_set(scope=scope, key=f"k{n}", value=n)

    body = client_as_alice.get(state_url(monitor)).json()

    assert len(body["history"]) == 50
    assert body["history"][0]["key"] == "k54"


# --- who may read it --------------------------------------------------------------------------


@pytest.mark.parametrize("key", [None, "cursor"])
def test_another_organizations_workflow_is_not_found_and_leaks_nothing(client_as_alice, foreign_workflow, key):
    run_workflow(foreign_workflow, {"block": 4242})

    response = client_as_alice.get(state_url(foreign_workflow, key=key))

    assert response.status_code == 404
    assert response.json() == {"code": "NOT_FOUND", "detail": "No such workflow."}
    assert b"4242" not in response.content


def test_another_organizations_state_is_not_in_the_usage(client_as_alice, monitor, foreign_workflow):
    run_workflow(foreign_workflow, {"block": 4242})

    body = client_as_alice.get(state_url(monitor)).json()

    assert body["usage"]["liveKeys"] == 0
    assert body["history"] == []


@pytest.mark.parametrize("key", [None, "cursor"])
def test_logged_out_is_a_401_json(client, monitor, key):
    response = client.get(state_url(monitor, key=key))

    assert response.status_code == 401
    assert response.json()["code"] == "NOT_AUTHENTICATED"


def test_a_soft_deleted_workflow_is_not_found(client_as_alice, monitor):
    run_workflow(monitor, {"block": 1})
    monitor.soft_delete()

    assert client_as_alice.get(state_url(monitor)).status_code == 404


@pytest.mark.parametrize("method", ["post", "put", "patch", "delete"])
def test_the_panel_has_no_write_path(csrf_client, monitor, method):
    run_workflow(monitor, {"block": 1})
    csrf_client.get(f"/builder/workflows/{monitor.id}/")
    token = csrf_client.cookies["csrftoken"].value

    response = getattr(csrf_client, method)(
        state_url(monitor), data=json.dumps({"key": "cursor", "value": 99}), content_type="application/json",
        HTTP_X_CSRFTOKEN=token,
    )

    assert response.status_code == 405
    assert {m.strip() for m in response["Allow"].split(",")} <= {"GET", "HEAD", "OPTIONS"}
    cursor = WorkflowState.objects.get(workflow=monitor, key="cursor")
    assert (cursor.value, cursor.version) == (1, 1)


def test_the_editor_page_links_the_panel(client_as_alice, monitor):
    page = client_as_alice.get(f"/builder/workflows/{monitor.id}/").content.decode()

    assert f'data-state-url="{state_url(monitor)}"' in page
    assert 'id="state-panel"' in page
    assert ">Read-only<" in page


def test_a_delete_made_by_a_run_names_that_run(client_as_alice, monitor):
    state_set(scope=scope_of(monitor), key="lock", value=True)
    monitor.nodes = [
        monitor.nodes[0],
        {"id": "state-delete-1", "type": "action", "position": {"x": 0, "y": 120},
         "data": {"label": "State Delete", "type": "action", "config": {"actionType": "State Delete", "key": "lock"}}},
    ]
    monitor.edges = [{"id": "e1", "source": "trigger", "target": "state-delete-1"}]
    monitor.save()
    execution = run_workflow(monitor, {"block": 1})
    assert execution.node_results["state-delete-1"]["data"]["deleted"] is True

    [delete] = client_as_alice.get(state_url(monitor, key="lock")).json()["results"][:1]

    assert (delete["operation"], delete["execution"], delete["actor"]) == ("delete", str(execution.id), None)
