"""Database invariants hold for every writer, not only the store (DESIGN.md §2)."""

from __future__ import annotations

import pytest
from django.db import DatabaseError, connection, transaction

from keeperstate.accounts.models import Organization
from keeperstate.state.models import WorkflowState
from keeperstate.state.store import state_get, state_set
from keeperstate.workflows.models import Workflow
from tests.factories import make_workflow
from tests.state.test_store import delete_workflow_by_sql

pytestmark = pytest.mark.django_db


def test_orm_update_moves_the_version(scope):
    state_set(scope=scope, key="cursor", value=1)
    row = WorkflowState.objects.get(key="cursor")

    row.value = 2
    row.save()

    row.refresh_from_db()
    assert row.version == 2


def test_raw_sql_update_moves_the_version_even_with_the_same_value(scope):
    state_set(scope=scope, key="cursor", value=1)

    with connection.cursor() as cursor:
        cursor.execute("UPDATE workflow_state SET value = value, version = 1 WHERE key = 'cursor'")

    assert state_get(scope=scope, key="cursor").version == 2


def test_a_writer_that_sets_its_own_version_gets_exactly_one_more(scope):
    """The bump's WHEN clause lets a writer that already sets version + 1 and now() skip the call;
    any other version a writer sets is replaced by the bump."""
    state_set(scope=scope, key="cursor", value=1)

    with connection.cursor() as cursor:
        cursor.execute(
            "UPDATE workflow_state SET value = '2', version = version + 5, updated_at = now() WHERE key = 'cursor'"
        )

    assert state_get(scope=scope, key="cursor").version == 2


def test_a_writer_that_bumps_the_version_but_not_the_time_gets_the_time(scope):
    state_set(scope=scope, key="cursor", value=1)
    with connection.cursor() as cursor:
        # Not an update of value or expiry: no bump, the row just looks old.
        cursor.execute("UPDATE workflow_state SET updated_at = '2000-01-01' WHERE key = 'cursor'")
        cursor.execute("UPDATE workflow_state SET value = '2', version = version + 1 WHERE key = 'cursor'")
        cursor.execute("SELECT version, updated_at = now() FROM workflow_state WHERE key = 'cursor'")

        assert cursor.fetchone() == (2, True)


def test_the_store_writes_move_the_version_by_one_each(scope):
    state_set(scope=scope, key="cursor", value=1)
    state_set(scope=scope, key="cursor", value=2)
    state_set(scope=scope, key="cursor", value=3, expected_version=2)
    state_set(scope=scope, key="cursor", value="a longer value than before")  # the locked path

    assert state_get(scope=scope, key="cursor").version == 4


def test_queryset_update_of_expiry_moves_the_version(scope):
    state_set(scope=scope, key="cursor", value=1)

    WorkflowState.objects.filter(key="cursor").update(expires_at=None)

    assert WorkflowState.objects.get(key="cursor").version == 2


def test_a_stale_cas_fails_after_an_admin_edit(scope):
    state_set(scope=scope, key="cursor", value=1)
    WorkflowState.objects.filter(key="cursor").update(value=5)

    from keeperstate.state.errors import StateVersionConflict

    with pytest.raises(StateVersionConflict):
        state_set(scope=scope, key="cursor", value=2, expected_version=1)


def test_key_cannot_change(scope):
    state_set(scope=scope, key="cursor", value=1)

    with pytest.raises(DatabaseError), transaction.atomic():
        WorkflowState.objects.filter(key="cursor").update(key="renamed")

    assert WorkflowState.objects.filter(key="cursor").exists()


def test_workflow_cannot_change(scope, org):
    state_set(scope=scope, key="cursor", value=1)
    other = make_workflow(org, name="Other")

    with pytest.raises(DatabaseError), transaction.atomic():
        WorkflowState.objects.filter(key="cursor").update(workflow=other)

    assert WorkflowState.objects.get(key="cursor").workflow_id == scope.workflow_id


def test_organization_cannot_drift_from_the_workflows(scope, other_org):
    state_set(scope=scope, key="cursor", value=1)

    with pytest.raises(DatabaseError), transaction.atomic():
        WorkflowState.objects.filter(key="cursor").update(organization=other_org)

    assert WorkflowState.objects.get(key="cursor").organization_id == scope.organization_id


def test_a_workflow_keeps_its_organization_for_every_writer(scope, workflow, other_org):
    # No ON UPDATE CASCADE any more (migration 0017): a row's organization is its shard.
    state_set(scope=scope, key="cursor", value=41)
    workflow.name = "renamed"
    workflow.save()  # an ordinary save leaves organization_id out of its UPDATE

    workflow.organization = other_org
    with pytest.raises(ValueError, match="cannot be moved"):
        workflow.save()
    with pytest.raises(DatabaseError), transaction.atomic(), connection.cursor() as cursor:
        cursor.execute("UPDATE workflow SET organization_id = %s WHERE id = %s", [other_org.id, workflow.id])

    assert Workflow.objects.get(pk=workflow.pk).organization_id == scope.organization_id
    assert Workflow.objects.get(pk=workflow.pk).name == "renamed"
    assert state_get(scope=scope, key="cursor").value == 41


def test_deleting_a_workflow_deletes_its_state(scope, workflow):
    state_set(scope=scope, key="cursor", value=1)
    WorkflowState.objects.filter(key="cursor").delete()  # leaves a tombstone
    state_set(scope=scope, key="cursor", value=2)

    workflow.delete()

    assert not WorkflowState.objects.exists()
    with connection.cursor() as cursor:
        cursor.execute("SELECT count(*) FROM workflow_state_tombstone")
        assert cursor.fetchone()[0] == 0


def test_raw_sql_workflow_delete_cascades_to_state(scope, workflow):
    state_set(scope=scope, key="cursor", value=1)

    delete_workflow_by_sql(workflow)

    assert not WorkflowState.objects.exists()


def test_deleting_an_organization_deletes_its_state(scope, org):
    state_set(scope=scope, key="cursor", value=1)

    Organization.objects.filter(pk=org.pk).delete()

    assert not WorkflowState.objects.exists()
    assert not Workflow.objects.exists()


def test_soft_deleted_workflow_keeps_its_state(scope, workflow):
    state_set(scope=scope, key="cursor", value=1)

    workflow.soft_delete()

    assert state_get(scope=scope, key="cursor").value == 1


def test_json_null_is_refused_by_the_database_too(scope):
    state_set(scope=scope, key="cursor", value=1)

    with pytest.raises(DatabaseError), transaction.atomic(), connection.cursor() as cursor:
        cursor.execute("UPDATE workflow_state SET value = 'null'::jsonb WHERE key = 'cursor'")
