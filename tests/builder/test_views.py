"""Builder pages and fragments: login, organization scope, CSRF (the editor's saves, validations
and runs go through the API: tests/api/test_editor_calls.py)."""

from __future__ import annotations

import json

import pytest

from keeperstate.workflows.models import Workflow

pytestmark = pytest.mark.django_db


def post_json(client, url, body, **extra):
    return client.post(url, data=json.dumps(body), content_type="application/json", **extra)


def url(workflow, action=""):
    return f"/builder/workflows/{workflow.id}/" + (f"{action}/" if action else "")


# --- pages ------------------------------------------------------------------------------


def test_root_redirects_to_the_builder(client):
    assert client.get("/")["Location"] == "/builder/"


def test_login_page_renders_and_logs_in(client, user):
    page = client.get("/accounts/login/")
    response = client.post("/accounts/login/", {"username": "alice", "password": "pw-alice"})

    assert page.status_code == 200
    assert b'name="username"' in page.content
    assert response["Location"] == "/builder/"


def test_pages_require_login(client, monitor):
    for path in ("/builder/", url(monitor), "/builder/palette/", "/builder/forms/State%20Get/"):
        response = client.get(path)
        assert response.status_code == 302, path
        assert response["Location"].startswith("/accounts/login/?next="), path


def test_workflow_list_shows_only_the_users_organizations(client_as_alice, monitor, foreign_workflow):
    page = client_as_alice.get("/builder/").content.decode()

    assert "Block monitor" in page
    assert "Globex monitor" not in page


def test_creating_a_workflow_opens_it_with_a_manual_trigger(client_as_alice, org):
    response = client_as_alice.post("/builder/", {"name": "Block monitor", "organization": org.pk})

    workflow = Workflow.objects.get(name="Block monitor")
    assert response["Location"] == url(workflow)
    assert workflow.organization == org
    assert [n["type"] for n in workflow.nodes] == ["trigger"]


def test_creating_a_workflow_in_another_organization_is_refused(client_as_alice, other_org):
    response = client_as_alice.post("/builder/", {"name": "Sneaky", "organization": other_org.pk})

    assert response.status_code == 400
    assert not Workflow.objects.filter(name="Sneaky").exists()


def test_creating_a_workflow_needs_a_name(client_as_alice, org):
    response = client_as_alice.post("/builder/", {"name": "", "organization": org.pk})

    assert response.status_code == 400
    assert b"This field is required" in response.content


def test_editor_renders_palette_graph_and_catalogue(client_as_alice, monitor):
    response = client_as_alice.get(url(monitor))
    page = response.content.decode()

    assert response.status_code == 200
    assert 'id="workflow-graph"' in page
    assert 'id="builder-catalogue"' in page
    assert 'data-entry-id="State Set"' in page
    assert "csrftoken" in response.cookies


def test_another_organizations_workflow_is_not_found(client_as_alice, foreign_workflow):
    assert client_as_alice.get(url(foreign_workflow)).status_code == 404


def test_a_soft_deleted_workflow_is_not_found(client_as_alice, monitor):
    monitor.soft_delete()

    assert client_as_alice.get(url(monitor)).status_code == 404


def test_form_post_enforces_csrf(csrf_client):
    response = csrf_client.post("/builder/forms/State%20Get/", {"key": "cursor"})

    assert response.status_code == 403
