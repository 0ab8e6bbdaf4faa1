"""A workflow's settings over the API: settings.errorWorkflow is another live workflow of the same
organization; anything else is refused with a code, and nothing changes."""

from __future__ import annotations

import pytest

from keeperstate.workflows.models import Workflow
from tests.factories import make_workflow

pytestmark = pytest.mark.django_db


@pytest.fixture
def handler(org, user):
    return make_workflow(org, name="On error", user=user)


def patch(api, workflow, settings):
    return api.patch(f"/api/workflows/{workflow.id}/", {"settings": settings}, format="json")


def test_an_error_workflow_of_the_same_organization_is_saved_and_read_back(api, workflow, handler):
    response = patch(api, workflow, {"errorWorkflow": str(handler.id)})

    assert response.status_code == 200
    assert response.json()["settings"] == {"errorWorkflow": str(handler.id)}
    assert api.get(f"/api/workflows/{workflow.id}/").json()["settings"] == {"errorWorkflow": str(handler.id)}


def test_null_clears_the_error_workflow(api, workflow, handler):
    patch(api, workflow, {"errorWorkflow": str(handler.id)})

    assert patch(api, workflow, {"errorWorkflow": None}).json()["settings"] == {}


@pytest.mark.parametrize(("chosen", "code"), [
    ("not-a-uuid", "ERROR_WORKFLOW_INVALID"),
    ("00000000-0000-0000-0000-000000000001", "ERROR_WORKFLOW_INVALID"),
    (17, "ERROR_WORKFLOW_INVALID"),
])
def test_an_error_workflow_that_is_no_workflow_here_is_refused(api, workflow, chosen, code):
    response = patch(api, workflow, {"errorWorkflow": chosen})

    assert response.status_code == 400
    assert (response.json()["code"], response.json()["field"]) == (code, "settings.errorWorkflow")
    assert Workflow.objects.get(pk=workflow.pk).settings == {}


def test_another_organizations_workflow_is_refused_like_a_missing_one(api, workflow, foreign_workflow):
    response = patch(api, workflow, {"errorWorkflow": str(foreign_workflow.id)})

    assert response.status_code == 400
    assert response.json()["code"] == "ERROR_WORKFLOW_INVALID"
    assert str(foreign_workflow.id) in response.json()["detail"]  # the id it was given, nothing of globex
    assert "Globex" not in response.json()["detail"]


def test_a_workflow_cannot_be_its_own_error_workflow(api, workflow):
    response = patch(api, workflow, {"errorWorkflow": str(workflow.id)})

    assert response.status_code == 400
    assert "its own error workflow" in response.json()["detail"]


def test_an_unknown_setting_is_refused(api, workflow):
    response = patch(api, workflow, {"timezone": "UTC"})

    assert response.status_code == 400
    assert response.json()["code"] == "SETTINGS_INVALID"
    assert response.json()["field"] == "settings.timezone"
