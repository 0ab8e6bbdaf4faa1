"""The move in Django admin, end to end through the test client: the organization stays read-only
on a saved workflow's page, and "Move to organization…" (a link on the page and a list action)
moves it through keeperstate/workflows/move.py, or shows the refusal's sentence."""

from __future__ import annotations

import pytest
from django.contrib.auth import get_user_model
from django.contrib.auth.models import Permission
from django.test import Client
from django.urls import reverse

from keeperstate.audit.models import AuditEvent
from keeperstate.executions.models import WorkflowExecution
from keeperstate.state.store import StateScope, state_get, state_set
from keeperstate.workflows.models import Workflow
from tests.factories import make_org, make_user
from tests.workflows.test_move import everything

pytestmark = pytest.mark.django_db


def staff(username, *roles):
    """A staff user (every keeperstate permission) with a role in each (organization, role)."""
    user = make_user(username)
    for organization, role in roles:
        user.memberships.create(organization=organization, role=role)
    user.is_staff = True
    user.save()
    user.user_permissions.set(Permission.objects.filter(content_type__app_label="keeperstate"))
    client = Client()
    client.force_login(user)
    return client


@pytest.fixture
def root():
    client = Client()
    client.force_login(get_user_model().objects.create_superuser("root", "root@example.com", "pw-root"))
    return client


@pytest.fixture
def cursor(scope):
    for block in range(5):
        state_set(scope=scope, key="cursor", value={"block": block})
    return state_get(scope=scope, key="cursor")


def move_url(workflow):
    return reverse("admin:keeperstate_workflow_move", args=[workflow.pk])


def test_the_change_page_keeps_the_organization_read_only_and_links_the_move(root, workflow, other_org):
    url = reverse("admin:keeperstate_workflow_change", args=[workflow.pk])
    page = root.get(url)
    assert page.status_code == 200
    assert 'name="organization"' not in page.content.decode()
    assert move_url(workflow) in page.content.decode()

    # Posting an organization anyway changes nothing: the field is not in the form.
    root.post(url, {"name": workflow.name, "description": "", "nodes": "[]", "edges": "[]",
                    "organization": other_org.pk})
    workflow.refresh_from_db()
    assert workflow.organization_id != other_org.pk


def test_a_superuser_moves_a_workflow_with_its_state(root, workflow, org, other_org, cursor):
    page = root.get(move_url(workflow))
    assert page.status_code == 200
    options = page.context["form"].fields["organization"].queryset
    assert list(options) == [other_org]  # never the workflow's own

    answer = root.post(move_url(workflow), {"organization": other_org.pk}, follow=True)

    assert answer.redirect_chain[-1][0] == reverse("admin:keeperstate_workflow_change", args=[workflow.pk])
    assert "moved from Acme to Globex" in answer.content.decode()
    assert Workflow.objects.get(pk=workflow.pk).organization_id == other_org.pk
    moved = state_get(scope=StateScope(other_org.id, workflow.id), key="cursor")
    assert (moved.value, moved.version) == (cursor.value, cursor.version)
    assert AuditEvent.objects.filter(action="workflow.move", organization_id=other_org.id).count() == 1


def test_an_admin_of_both_organizations_moves_through_the_list_action(workflow, org, other_org, cursor):
    client = staff("both", (org, "admin"), (other_org, "owner"))
    changelist = reverse("admin:keeperstate_workflow_changelist")

    answer = client.post(changelist, {"action": "move_to_organization", "_selected_action": [workflow.pk]})
    assert answer.status_code == 302
    assert answer.url == move_url(workflow)
    client.post(answer.url, {"organization": other_org.pk})

    assert Workflow.objects.get(pk=workflow.pk).organization_id == other_org.pk


def test_the_action_takes_one_workflow_at_a_time(root, workflow, org):
    second = Workflow.objects.create(organization=org, name="second")
    answer = root.post(reverse("admin:keeperstate_workflow_changelist"),
                       {"action": "move_to_organization", "_selected_action": [workflow.pk, second.pk]}, follow=True)
    assert "Select exactly one workflow" in answer.content.decode()


def test_a_refusal_is_shown_with_its_sentence_and_changes_nothing(root, workflow, other_org, cursor):
    WorkflowExecution.objects.create(workflow=workflow, status="running")
    before = everything()

    page = root.post(move_url(workflow), {"organization": other_org.pk})

    assert page.status_code == 200
    assert "queued or running" in page.content.decode()
    assert page.context["form"].non_field_errors().as_data()[0].code == "MOVE_RUN_IN_PROGRESS"
    assert everything() == before


def test_a_staff_admin_can_pick_only_organizations_they_administer(workflow, org, other_org):
    third = make_org("initech")
    client = staff("half", (org, "admin"), (other_org, "member"), (third, "owner"))

    page = client.get(move_url(workflow))
    assert list(page.context["form"].fields["organization"].queryset) == [third]
    before = everything()
    page = client.post(move_url(workflow), {"organization": other_org.pk})
    assert "Select a valid choice" in page.content.decode()
    assert everything() == before


def test_a_staff_user_of_another_organization_cannot_reach_the_move(workflow, other_org):
    client = staff("outsider", (other_org, "owner"))
    answer = client.get(move_url(workflow))
    assert answer.status_code == 302  # the admin's "does not exist" redirect: nothing is told
    assert Workflow.objects.get(pk=workflow.pk).organization_id != other_org.pk
