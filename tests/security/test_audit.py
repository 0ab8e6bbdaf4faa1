"""The audit log: a row for each audited action, append-only in the database, and readable
through the API by an organization's owners and admins only."""

from __future__ import annotations

import json

import pytest
from django.contrib.auth import get_user_model
from django.db import DatabaseError, connection, transaction
from django.test import Client
from django.urls import reverse

from keeperstate.accounts.models import Membership
from keeperstate.audit.log import audit
from keeperstate.audit.models import AuditEvent
from keeperstate.state.models import WorkflowState
from keeperstate.state.store import state_set
from tests.api.conftest import token_client
from tests.factories import make_user

pytestmark = pytest.mark.django_db


def actions() -> list[str]:
    return list(AuditEvent.objects.order_by("id").values_list("action", flat=True))


def test_a_login_and_a_failed_login_are_recorded_with_the_address(client, user):
    client.post("/accounts/login/", {"username": "alice", "password": "wrong"}, REMOTE_ADDR="10.3.3.3")
    client.post("/accounts/login/", {"username": "alice", "password": "pw-alice"}, REMOTE_ADDR="10.3.3.3")

    failed, ok = AuditEvent.objects.filter(action__startswith="login").order_by("id")
    assert (failed.action, failed.actor_name, failed.address) == ("login_failed", "alice", "10.3.3.3")
    assert (ok.action, ok.actor_id, ok.address) == ("login", user.pk, "10.3.3.3")
    assert "wrong" not in json.dumps(failed.details)


def test_workflow_create_update_and_delete_through_the_api_are_recorded(user, org):
    api = token_client(user)

    created = api.post("/api/workflows/", {"name": "Audited"}, REMOTE_ADDR="10.4.4.4").json()
    api.patch(f"/api/workflows/{created['id']}/", {"name": "Renamed"})
    api.patch(f"/api/workflows/{created['id']}/", {"name": "Renamed"})  # no change: no row
    api.delete(f"/api/workflows/{created['id']}/")

    events = AuditEvent.objects.filter(target_id=created["id"]).order_by("id")
    assert [e.action for e in events] == ["workflow.create", "workflow.update", "workflow.delete"]
    assert {e.organization_id for e in events} == {org.pk}
    assert {e.actor_name for e in events} == {"alice"}
    assert events[0].address == "10.4.4.4"
    assert events[1].details == {"fields": ["name"]}


def test_saving_in_the_editor_is_recorded_by_the_same_service(user, monitor):
    client = Client()
    client.force_login(user)

    client.patch(f"/api/workflows/{monitor.id}/", json.dumps({"name": "From the editor"}),  # the editor's save
                 content_type="application/json")

    event = AuditEvent.objects.get(action="workflow.update")
    assert (event.target_id, event.actor_name, event.details) == (str(monitor.id), "alice", {"fields": ["name"]})


def test_a_hard_delete_is_recorded(org, monitor):
    owner = make_user("olga", org, role="owner")

    token_client(owner).delete(f"/api/workflows/{monitor.id}/?hard=true")

    assert AuditEvent.objects.filter(action="workflow.hard_delete", target_id=str(monitor.id)).exists()


def test_membership_changes_are_recorded(org, user):
    membership = Membership.objects.get(user=user)
    membership.role = Membership.Role.ADMIN
    membership.save()
    membership.delete()

    assert actions() == ["membership.add", "membership.change", "membership.remove"]
    change = AuditEvent.objects.get(action="membership.change")
    assert change.details == {"user": "alice", "role": "admin", "previousRole": "member"}


def test_an_admin_repair_of_state_is_recorded(scope, client):
    root = get_user_model().objects.create_superuser("root", "root@example.com", "pw-root")
    client.force_login(root)
    state_set(scope=scope, key="cursor", value=1)
    row = WorkflowState.objects.get(key="cursor")

    client.post(reverse("admin:keeperstate_workflowstate_change", args=[row.pk]),
                {"value": "2", "expires_at_0": "", "expires_at_1": ""}, REMOTE_ADDR="10.5.5.5")
    client.post(reverse("admin:keeperstate_workflowstate_delete", args=[row.pk]), {"post": "yes"})

    update = AuditEvent.objects.get(action="state.update")
    assert (update.actor_name, update.address, update.details["key"]) == ("root", "10.5.5.5", "cursor")
    assert AuditEvent.objects.filter(action="state.delete", details__key="cursor").exists()


def test_secrets_put_replaced_and_deleted_through_the_api_are_recorded_by_name_only(org, user):
    api = token_client(user)

    api.put("/api/secrets/RPC_KEY/", {"value": "s3cr3t-one"}, format="json")
    api.put("/api/secrets/RPC_KEY/", {"value": "s3cr3t-two"}, format="json")
    api.delete("/api/secrets/RPC_KEY/")

    rows = list(AuditEvent.objects.filter(action__startswith="secret.").order_by("id"))
    assert [(r.action, r.details, r.actor_name) for r in rows] == [
        ("secret.create", {"name": "RPC_KEY"}, "alice"),
        ("secret.replace", {"name": "RPC_KEY"}, "alice"),
        ("secret.delete", {"name": "RPC_KEY"}, "alice"),
    ]
    assert "s3cr3t" not in json.dumps([r.details for r in rows]) + "".join(r.target_repr for r in rows)


@pytest.mark.parametrize("statement", [
    "UPDATE audit_event SET action = 'forged'",
    "DELETE FROM audit_event",
])
def test_the_database_refuses_to_change_or_remove_a_row(user, statement):
    audit("login", actor=user)

    with pytest.raises(DatabaseError), transaction.atomic(), connection.cursor() as cursor:
        cursor.execute(statement)

    assert AuditEvent.objects.filter(action="login").count() == 1


def test_the_orm_cannot_delete_a_row_either(user):
    event = audit("login", actor=user)

    with pytest.raises(DatabaseError), transaction.atomic():
        AuditEvent.objects.filter(pk=event.pk).delete()


def test_owners_and_admins_read_their_organizations_log_through_the_api(org, other_org, user, foreign_workflow):
    admin = make_user("ada", org, role="admin")
    token_client(user).post("/api/workflows/", {"name": "Ours"})
    audit("workflow.create", organization=other_org, details={"name": "theirs"})

    as_admin = token_client(admin).get("/api/audit/")
    as_member = token_client(user).get("/api/audit/")

    assert as_admin.status_code == 200
    results = as_admin.json()["results"]
    assert {r["organization"] for r in results} == {"acme"}
    assert "workflow.create" in {r["action"] for r in results}
    assert as_member.json()["results"] == []


def test_the_api_filters_by_action(org, user):
    owner = make_user("olga", org, role="owner")
    token_client(user).post("/api/workflows/", {"name": "Ours"})

    response = token_client(owner).get("/api/audit/?action=workflow.create")

    assert [r["action"] for r in response.json()["results"]] == ["workflow.create"]
