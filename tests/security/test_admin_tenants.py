"""Admin per tenant: a staff user who is not a superuser sees and changes only the
organizations it owns or administers, and their workflows, executions, state and audit log."""

from __future__ import annotations

import pytest
from django.contrib.auth.models import Permission
from django.test import Client
from django.urls import reverse

from keeperstate.accounts.models import Organization
from keeperstate.audit.log import audit
from keeperstate.audit.models import AuditEvent
from keeperstate.executions.service import run_workflow
from keeperstate.state.models import WorkflowState
from tests.factories import make_user

pytestmark = pytest.mark.django_db

MODELS = ["organization", "membership", "workflow", "workflowexecution", "workflowstate", "auditevent"]


@pytest.fixture
def org_admin(org):
    """Staff with every keeperstate model permission, admin of acme only."""
    user = make_user("ada", org, role="admin")
    user.is_staff = True
    user.save()
    user.user_permissions.set(Permission.objects.filter(content_type__app_label="keeperstate"))
    return user


@pytest.fixture
def admin_client(org_admin) -> Client:
    client = Client()
    client.force_login(org_admin)
    return client


@pytest.fixture
def both_tenants(monitor, foreign_workflow, org, other_org):
    """A run (execution + state) and an audit row in each organization."""
    ours, theirs = run_workflow(monitor, {"block": 1}), run_workflow(foreign_workflow, {"block": 2})
    audit("workflow.update", organization=org, target=monitor)
    audit("workflow.update", organization=other_org, target=foreign_workflow)
    return ours, theirs


@pytest.mark.parametrize("model", MODELS)
def test_lists_show_only_the_administered_organization(admin_client, both_tenants, model):
    response = admin_client.get(reverse(f"admin:keeperstate_{model}_changelist"))

    assert response.status_code == 200
    page = response.content.decode()
    assert "Globex" not in page
    assert "globex" not in page


def test_another_organizations_objects_cannot_be_opened(admin_client, both_tenants, foreign_workflow, other_org):
    theirs = both_tenants[1]
    state = WorkflowState.objects.get(workflow=foreign_workflow)
    event = AuditEvent.objects.get(organization=other_org, action="workflow.update")
    urls = [
        reverse("admin:keeperstate_organization_change", args=[other_org.pk]),
        reverse("admin:keeperstate_workflow_change", args=[foreign_workflow.pk]),
        reverse("admin:keeperstate_workflowexecution_change", args=[theirs.pk]),
        reverse("admin:keeperstate_workflowstate_change", args=[state.pk]),
        reverse("admin:keeperstate_auditevent_change", args=[event.pk]),
        reverse("admin:keeperstate_workflow_delete", args=[foreign_workflow.pk]),
    ]

    for url in urls:
        response = admin_client.get(url)
        # Django admin answers a row outside the queryset as "does not exist" (a redirect)
        assert response.status_code == 302, url
        assert response["Location"] == reverse("admin:index"), url


def test_own_objects_can_be_opened_and_changed(admin_client, both_tenants, monitor):
    state = WorkflowState.objects.get(workflow=monitor)

    assert admin_client.get(reverse("admin:keeperstate_workflow_change", args=[monitor.pk])).status_code == 200
    assert admin_client.get(reverse("admin:keeperstate_workflowstate_change", args=[state.pk])).status_code == 200


def test_a_workflow_cannot_be_moved_into_another_organization(admin_client, monitor, other_org):
    url = reverse("admin:keeperstate_workflow_change", args=[monitor.pk])
    form = admin_client.get(url).content.decode()

    response = admin_client.post(url, {"organization": other_org.pk, "name": monitor.name, "description": "",
                                       "nodes": "[]", "edges": "[]"})

    assert f'value="{other_org.pk}"' not in form
    assert 'name="organization"' not in form  # read-only once saved: rows never change organization
    assert response.status_code == 302  # saved, the posted organization ignored
    monitor.refresh_from_db()
    assert monitor.organization != other_org


def test_a_staff_member_who_is_not_an_org_admin_sees_no_tenant(org, monitor):
    member = make_user("meg", org, role="member")
    member.is_staff = True
    member.save()
    member.user_permissions.set(Permission.objects.filter(content_type__app_label="keeperstate"))
    client = Client()
    client.force_login(member)

    response = client.get(reverse("admin:keeperstate_workflow_changelist"))

    assert monitor.name not in response.content.decode()


def test_only_superusers_create_organizations(admin_client):
    response = admin_client.get(reverse("admin:keeperstate_organization_add"))

    assert response.status_code == 403
    assert Organization.objects.count() == 1
