"""Django admin for state: inspect, repair (the version moves), delete; never add."""

from __future__ import annotations

import pytest
from django.contrib.auth import get_user_model
from django.urls import reverse

from keeperstate.executions.service import run_workflow
from keeperstate.state.models import WorkflowState
from keeperstate.state.store import state_set

pytestmark = pytest.mark.django_db


@pytest.fixture
def admin_client(client):
    admin = get_user_model().objects.create_superuser("root", "root@example.com", "pw-root")
    client.force_login(admin)
    return client


@pytest.fixture
def row(scope):
    state_set(scope=scope, key="cursor", value={"block": 100})
    return WorkflowState.objects.get(key="cursor")


@pytest.mark.parametrize(
    "model", ["organization", "membership", "workflow", "workflowexecution", "workflowstate"]
)
def test_every_model_has_a_working_changelist(admin_client, row, model):
    response = admin_client.get(reverse(f"admin:keeperstate_{model}_changelist"))

    assert response.status_code == 200


def test_state_changelist_shows_key_value_version_and_filters(admin_client, row):
    response = admin_client.get(reverse("admin:keeperstate_workflowstate_changelist") + "?expiry=live&q=cursor")

    body = response.content.decode()
    assert "cursor" in body
    assert "{&quot;block&quot;: 100}" in body or '{"block": 100}' in body


def test_state_change_page_links_the_writing_execution(admin_client, workflow):
    from keeperstate.workflows.examples import block_monitor_graph

    workflow.nodes, workflow.edges = block_monitor_graph()
    workflow.save()
    execution = run_workflow(workflow, {"block": 7})
    row = WorkflowState.objects.get(key="cursor")

    response = admin_client.get(reverse("admin:keeperstate_workflowstate_change", args=[row.pk]))

    assert reverse("admin:keeperstate_workflowexecution_change", args=[execution.pk]) in response.content.decode()


def test_admin_edit_moves_the_version(admin_client, row):
    url = reverse("admin:keeperstate_workflowstate_change", args=[row.pk])

    response = admin_client.post(url, {"value": '{"block": 99}', "expires_at_0": "", "expires_at_1": ""})

    assert response.status_code == 302
    row.refresh_from_db()
    assert (row.value, row.version) == ({"block": 99}, 2)


@pytest.mark.parametrize(("value", "message"), [("null", "null"), ('"' + "x" * 9000 + '"', "8192 bytes")])
def test_admin_edit_is_checked_like_any_write(admin_client, row, value, message):
    url = reverse("admin:keeperstate_workflowstate_change", args=[row.pk])

    response = admin_client.post(url, {"value": value, "expires_at_0": "", "expires_at_1": ""})

    assert response.status_code == 200
    assert message in response.content.decode()
    row.refresh_from_db()
    assert (row.value, row.version) == ({"block": 100}, 1)


def test_admin_can_delete_but_not_add_state(admin_client, row):
    assert admin_client.get(reverse("admin:keeperstate_workflowstate_add")).status_code == 403

    response = admin_client.post(reverse("admin:keeperstate_workflowstate_delete", args=[row.pk]), {"post": "yes"})

    assert response.status_code == 302
    assert not WorkflowState.objects.exists()


def test_admin_is_branded_keeperstate(admin_client):
    body = admin_client.get(reverse("admin:index")).content.decode()

    assert "KeeperState administration" in body
    assert "Django administration" not in body


def test_the_success_message_names_the_new_version(admin_client, row):
    url = reverse("admin:keeperstate_workflowstate_change", args=[row.pk])
    admin_client.post(url, {"value": "2", "expires_at_0": "", "expires_at_1": ""})

    response = admin_client.post(url, {"value": "3", "expires_at_0": "", "expires_at_1": ""}, follow=True)

    messages = [str(m) for m in response.context["messages"]]
    assert any("cursor (v3)" in m for m in messages), messages


def test_state_list_shows_expiry_as_a_phrase_and_the_run_as_its_short_id(admin_client, workflow):
    from datetime import timedelta

    from django.utils import timezone

    from keeperstate.workflows.examples import block_monitor_graph

    workflow.nodes, workflow.edges = block_monitor_graph()
    workflow.save()
    execution = run_workflow(workflow, {"block": 7})
    WorkflowState.objects.create(organization=workflow.organization, workflow=workflow, key="soon", value=1,
                                        expires_at=timezone.now() + timedelta(minutes=5))
    WorkflowState.objects.create(organization=workflow.organization, workflow=workflow, key="gone", value=1,
                                 expires_at=timezone.now() - timedelta(hours=2))

    body = admin_client.get(reverse("admin:keeperstate_workflowstate_changelist")).content.decode()

    assert f">run {str(execution.id)[:8]}</a>" in body
    assert ">live<" in body  # the cursor has no TTL
    assert "expires in 5 min" in body
    assert "expired 2 h ago" in body


def test_organization_budget_reads_in_one_format(admin_client, row):
    body = admin_client.get(reverse("admin:keeperstate_workflowstate_change", args=[row.pk])).content.decode()

    # gauges (keeperstate/admin/charts.py): each meter with its numbers beside it
    assert "1 of 10,000 (0.01 %)" in body
    assert " of 50 MB (" in body
