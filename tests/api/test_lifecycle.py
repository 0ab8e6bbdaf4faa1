"""Duplicate, export, import and delete (DESIGN.md §6 Lifecycle): state follows the workflow id."""

from __future__ import annotations

import pytest

from keeperstate.executions.models import WorkflowExecution
from keeperstate.executions.service import run_workflow
from keeperstate.state.models import WorkflowState
from keeperstate.workflows.models import Workflow
from tests.api.conftest import token_client

pytestmark = pytest.mark.django_db


@pytest.fixture
def ran_monitor(monitor):
    """The monitor after one run: its cursor is in state."""
    run_workflow(monitor, {"block": 100})
    return monitor


def cursor_of(workflow) -> object:
    """The cursor's value in the workflow's state, or None when there is no cursor."""
    return WorkflowState.objects.filter(workflow=workflow, key="cursor").values_list("value", flat=True).first()


# duplicate


def test_duplicate_is_a_new_workflow_with_the_same_graph(api, ran_monitor):
    response = api.post(f"/api/workflows/{ran_monitor.id}/duplicate/")

    assert response.status_code == 201
    copy = response.json()
    assert copy["id"] != str(ran_monitor.id)
    assert copy["name"] == "Block monitor (copy)"
    assert (copy["nodes"], copy["edges"]) == (ran_monitor.nodes, ran_monitor.edges)


def test_duplicate_starts_with_empty_state(api, ran_monitor):
    copy_id = api.post(f"/api/workflows/{ran_monitor.id}/duplicate/").json()["id"]

    run = api.post(f"/api/workflows/{copy_id}/execute/", {"input": {"block": 50}}).json()

    assert run["nodeResults"]["state-get-1"]["data"]["exists"] is False
    assert cursor_of(Workflow.objects.get(pk=copy_id)) == 50
    assert cursor_of(ran_monitor) == 100  # the original's cursor is untouched


def test_duplicate_takes_a_name(api, monitor):
    response = api.post(f"/api/workflows/{monitor.id}/duplicate/", {"name": "Monitor B"})

    assert response.json()["name"] == "Monitor B"


# export and import


def test_export_is_the_graph_without_state(api, ran_monitor):
    response = api.get(f"/api/workflows/{ran_monitor.id}/export/")

    assert response.status_code == 200
    assert response.json() == {
        "name": "Block monitor",
        "description": "",
        "nodes": ran_monitor.nodes,
        "edges": ran_monitor.edges,
    }


def test_export_then_import_gives_the_same_graph_under_a_new_id_and_no_state(api, ran_monitor):
    document = api.get(f"/api/workflows/{ran_monitor.id}/export/").json()

    response = api.post("/api/workflows/import/", document)

    assert response.status_code == 201
    imported = Workflow.objects.get(pk=response.json()["id"])
    assert imported.pk != ran_monitor.pk
    assert (imported.name, imported.nodes, imported.edges) == ("Block monitor", ran_monitor.nodes, ran_monitor.edges)
    assert not WorkflowState.objects.filter(workflow=imported).exists()


def test_import_of_an_invalid_graph_saves_nothing(api, monitor):
    document = {"name": "Bad import", "nodes": monitor.nodes, "edges": [{"source": "trigger", "target": "nowhere"}]}

    response = api.post("/api/workflows/import/", document)

    assert response.status_code == 400
    assert response.json()["code"] == "WORKFLOW_INVALID"
    assert not Workflow.objects.filter(name="Bad import").exists()


def test_import_without_a_name_gets_a_default_one(api):
    response = api.post("/api/workflows/import/", {})

    assert response.status_code == 201
    assert response.json()["name"] == "Imported workflow"


# soft delete


def test_delete_hides_the_workflow_and_keeps_its_state(api, ran_monitor):
    response = api.delete(f"/api/workflows/{ran_monitor.id}/")

    assert response.status_code == 204
    ran_monitor.refresh_from_db()
    assert ran_monitor.deleted_at is not None
    assert cursor_of(ran_monitor) == 100
    assert api.get(f"/api/workflows/{ran_monitor.id}/").status_code == 404
    assert api.get("/api/workflows/").json()["count"] == 0
    assert api.post(f"/api/workflows/{ran_monitor.id}/execute/", {"input": {}}).status_code == 404


@pytest.mark.parametrize("hard", ["false", "0"])
def test_delete_with_hard_false_is_a_soft_delete(api, ran_monitor, hard):
    assert api.delete(f"/api/workflows/{ran_monitor.id}/?hard={hard}").status_code == 204

    assert Workflow.objects.filter(pk=ran_monitor.pk).exists()
    assert cursor_of(ran_monitor) == 100


# hard delete


@pytest.mark.parametrize("role_fixture", ["admin_user", "owner_user"])
def test_hard_delete_by_an_admin_or_owner_removes_workflow_runs_and_state(request, ran_monitor, role_fixture):
    client = token_client(request.getfixturevalue(role_fixture))

    response = client.delete(f"/api/workflows/{ran_monitor.id}/?hard=true")

    assert response.status_code == 204
    assert not Workflow.objects.filter(pk=ran_monitor.pk).exists()
    assert not WorkflowState.objects.filter(workflow_id=ran_monitor.pk).exists()
    assert not WorkflowExecution.objects.filter(workflow_id=ran_monitor.pk).exists()


def test_hard_delete_by_a_member_is_forbidden_and_changes_nothing(api, ran_monitor):
    response = api.delete(f"/api/workflows/{ran_monitor.id}/?hard=true")

    assert response.status_code == 403
    assert response.json()["code"] == "PERMISSION_DENIED"
    ran_monitor.refresh_from_db()
    assert ran_monitor.deleted_at is None
    assert cursor_of(ran_monitor) == 100


def test_hard_delete_with_a_bad_flag_is_a_field_error(admin_user, ran_monitor):
    response = token_client(admin_user).delete(f"/api/workflows/{ran_monitor.id}/?hard=maybe")

    assert response.status_code == 400
    assert response.json() == {"hard": ["Must be a valid boolean."]}
    assert Workflow.objects.get(pk=ran_monitor.pk).deleted_at is None
