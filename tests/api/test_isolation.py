"""Another organization's workflows and executions do not exist for you (DESIGN.md §9).

Every endpoint that takes an id is tried with the id of a workflow (or execution) of globex by
alice of acme, even by acme's admin for the hard delete: each answers 404, the same answer as
for an id that never existed, and nothing of globex changes.
"""

from __future__ import annotations

import uuid

import pytest

from keeperstate.executions.models import WorkflowExecution
from keeperstate.state.models import WorkflowState
from keeperstate.workflows.models import Workflow
from tests.api.conftest import token_client

pytestmark = [pytest.mark.django_db, pytest.mark.usefixtures("foreign_run")]

WORKFLOW_ENDPOINTS = [
    ("get", "/api/workflows/{id}/", None),
    ("put", "/api/workflows/{id}/", {"name": "Taken", "nodes": [], "edges": []}),
    ("patch", "/api/workflows/{id}/", {"name": "Taken"}),
    ("delete", "/api/workflows/{id}/", None),
    ("delete", "/api/workflows/{id}/?hard=true", None),
    ("post", "/api/workflows/{id}/duplicate/", {}),
    ("get", "/api/workflows/{id}/export/", None),
    ("post", "/api/workflows/{id}/execute/", {"input": {"block": 999}}),
    ("get", "/api/workflows/{id}/executions/", None),
    ("get", "/api/workflows/{id}/executions/stats/", None),
]


def snapshot(workflow: Workflow) -> tuple:
    workflow.refresh_from_db()
    state = list(WorkflowState.objects.filter(workflow=workflow).values_list("key", "value", "version"))
    return (
        workflow.name,
        workflow.nodes,
        workflow.updated_at,
        workflow.deleted_at,
        state,
        WorkflowExecution.objects.filter(workflow=workflow).count(),
        Workflow.objects.count(),
    )


@pytest.mark.parametrize(("method", "path", "body"), WORKFLOW_ENDPOINTS)
def test_another_organizations_workflow_is_404_and_unchanged(admin_user, foreign_workflow, method, path, body):
    before = snapshot(foreign_workflow)
    client = token_client(admin_user)

    response = getattr(client, method)(path.format(id=foreign_workflow.id), body)

    assert response.status_code == 404
    assert response.json() == {"code": "NOT_FOUND", "detail": "No such workflow."}
    assert snapshot(foreign_workflow) == before


@pytest.mark.parametrize(("method", "path", "body"), WORKFLOW_ENDPOINTS)
def test_a_foreign_id_answers_exactly_like_an_unknown_one(api, foreign_workflow, method, path, body):
    foreign = getattr(api, method)(path.format(id=foreign_workflow.id), body)
    unknown = getattr(api, method)(path.format(id=uuid.uuid4()), body)

    assert (foreign.status_code, foreign.json()) == (unknown.status_code, unknown.json())


def test_another_organizations_execution_is_404(api, foreign_run):
    response = api.get(f"/api/executions/{foreign_run.id}/")

    assert response.status_code == 404
    assert response.json() == {"code": "NOT_FOUND", "detail": "No such execution."}


def test_another_organizations_workflows_are_not_listed(api, workflow, foreign_workflow):
    everything = [w["id"] for w in api.get("/api/workflows/").json()["results"]]
    filtered = api.get("/api/workflows/?organization=globex").json()

    assert everything == [str(workflow.id)]
    assert filtered["count"] == 0


@pytest.mark.parametrize("path", ["/api/workflows/", "/api/workflows/import/"])
@pytest.mark.parametrize("ref", ["globex", "no-such-org"])
def test_creating_in_an_organization_you_are_not_in_is_refused_and_creates_nothing(
    api, foreign_workflow, other_org, path, ref
):
    count = Workflow.objects.count()

    response = api.post(path, {"name": "Planted", "organization": ref})

    assert response.status_code == 400
    assert response.json() == {"organization": [f"You are not a member of an organization '{ref}'."]}
    assert Workflow.objects.count() == count


def test_creating_in_a_foreign_organization_by_id_is_refused(api, other_org):
    response = api.post("/api/workflows/", {"name": "Planted", "organization": other_org.pk})

    assert response.status_code == 400
    assert not Workflow.objects.filter(name="Planted").exists()


def test_the_foreign_user_still_sees_its_own_workflow(foreign_user, foreign_workflow, workflow):
    ids = [w["id"] for w in token_client(foreign_user).get("/api/workflows/").json()["results"]]

    assert ids == [str(foreign_workflow.id)]
