"""Usage counters (rows per workflow; rows and bytes per organization) stay exact for every
writer, and an expired key stops counting as live although nobody writes at expiry time."""

from __future__ import annotations

import pytest
from django.db import connection

from keeperstate.accounts.models import Organization
from keeperstate.state.errors import StateKeyLimit, StateOrgBudget
from keeperstate.state.maintenance import admin_delete, admin_update, sweep_expired
from keeperstate.state.models import WorkflowState, WorkflowStateEvent
from keeperstate.state.selectors import org_usage
from keeperstate.state.store import StateScope, state_delete, state_get, state_increment, state_set
from tests import citus
from tests.factories import make_workflow
from tests.state.test_store import delete_workflow_by_sql, expire

pytestmark = pytest.mark.django_db


def counted() -> tuple[dict, dict]:
    """The counters as kept, by workflow and by organization (zero rows left out)."""
    with connection.cursor() as cursor:
        cursor.execute("SELECT workflow_id, keys FROM workflow_state_usage WHERE keys <> 0")
        workflows = dict(cursor.fetchall())
        cursor.execute(
            "SELECT organization_id, sum(keys), sum(bytes) FROM organization_state_usage GROUP BY organization_id "
            "HAVING sum(keys) <> 0 OR sum(bytes) <> 0"
        )
        orgs = {org: (keys, size) for org, keys, size in cursor.fetchall()}
    return workflows, orgs


def recounted() -> tuple[dict, dict]:
    """The same figures by scanning workflow_state."""
    with connection.cursor() as cursor:
        cursor.execute("SELECT workflow_id, count(*) FROM workflow_state GROUP BY workflow_id")
        workflows = dict(cursor.fetchall())
        cursor.execute("SELECT organization_id, count(*), sum(size_bytes) FROM workflow_state GROUP BY organization_id")
        orgs = {org: (keys, size) for org, keys, size in cursor.fetchall()}
    return workflows, orgs


def assert_exact() -> None:
    assert counted() == recounted()


def test_store_writes_keep_the_counters_exact(scope):
    state_set(scope=scope, key="a", value=1)
    state_set(scope=scope, key="a", value="a longer value")  # grows
    state_set(scope=scope, key="a", value=2)  # shrinks
    state_increment(scope=scope, key="n", by=9)
    state_increment(scope=scope, key="n")  # 9 → 10 grows by a digit
    state_set(scope=scope, key="t", value=1, ttl=60)
    state_delete(scope=scope, key="n")

    assert_exact()
    assert counted()[0] == {scope.workflow_id: 2}


def test_admin_sweeper_and_raw_sql_keep_the_counters_exact(scope, workflow):
    for i in range(5):
        state_set(scope=scope, key=f"k{i}", value=i, ttl=60)
    admin_update(state_id=WorkflowState.objects.get(key="k0").pk, value={"repaired": True}, expires_at=None,
                 actor="admin:root")
    admin_delete(state_ids=[WorkflowState.objects.get(key="k1").pk], actor="admin:root")
    expire(scope, "k2")
    list(sweep_expired())
    with connection.cursor() as cursor:
        cursor.execute(
            "INSERT INTO workflow_state (organization_id, workflow_id, key, value) "
            "SELECT %s, %s, 'raw' || n, to_jsonb(n) FROM generate_series(1, 30) n",
            [scope.organization_id, scope.workflow_id],
        )
        cursor.execute("UPDATE workflow_state SET value = to_jsonb(repeat('x', 50)) WHERE key LIKE 'raw1%%'")
        cursor.execute("DELETE FROM workflow_state WHERE key LIKE 'raw2%%'")

    assert_exact()


def rows_written(*tables: str) -> int:
    """Rows this transaction has inserted or updated in ``tables``, so far."""
    with connection.cursor() as cursor:
        cursor.execute(
            "SELECT sum(pg_stat_get_xact_tuples_inserted(t::regclass) + pg_stat_get_xact_tuples_updated(t::regclass))"
            " FROM unnest(%s::text[]) t", [list(tables)],
        )
        return cursor.fetchone()[0]


BOOKKEEPING = ("organization_state_usage", "workflow_state_usage", "workflow_state_tombstone", "workflow_state_event")


@citus.STATISTICS
def test_the_stores_delete_does_its_bookkeeping_once_and_the_trigger_adds_none(scope):
    # given a live key at version 3
    for n in range(3):
        state_set(scope=scope, key="k", value=n)
    before = rows_written(*BOOKKEEPING)

    # when the store deletes it (which writes event, tombstone and counters before the delete)
    assert state_delete(scope=scope, key="k").previous_version == 3

    # then each of the four was written once: the trigger found the tombstone at version 3 and
    # returned (had it counted again, the counters would be off by one and six rows written)
    assert rows_written(*BOOKKEEPING) - before == 4
    assert_exact()
    with connection.cursor() as cursor:
        cursor.execute("SELECT last_version FROM workflow_state_tombstone WHERE workflow_id = %s AND key = 'k'",
                       [scope.workflow_id])
        assert cursor.fetchall() == [(3,)]
    assert WorkflowStateEvent.objects.filter(key="k", operation="delete").count() == 1


@pytest.mark.parametrize("deleter", ["sql", "admin", "sweeper"])
def test_a_key_the_store_deleted_before_gets_the_triggers_bookkeeping_from_any_other_deleter(scope, deleter):
    # given a key the store deleted at version 2 (its tombstone says 2), written again (version 3)
    state_set(scope=scope, key="k", value=1)
    state_set(scope=scope, key="k", value=2)
    state_delete(scope=scope, key="k")
    state_set(scope=scope, key="k", value=3, ttl=60)

    # when another deleter deletes its second life (the sweeper's after it expired: a version more)
    if deleter == "sweeper":
        expire(scope, "k")
    last = WorkflowState.objects.get(key="k").version
    if deleter == "sql":
        with connection.cursor() as cursor:
            cursor.execute("DELETE FROM workflow_state WHERE workflow_id = %s AND key = 'k'", [scope.workflow_id])
    elif deleter == "admin":
        admin_delete(state_ids=[WorkflowState.objects.get(key="k").pk], actor="admin:root")
    else:
        list(sweep_expired())

    # then the trigger did the bookkeeping: the tombstone at its last version (a tombstone at an older
    # version is not the store's mark), the counters exact, the delete in the history once
    assert not WorkflowState.objects.filter(key="k").exists()
    with connection.cursor() as cursor:
        cursor.execute("SELECT last_version FROM workflow_state_tombstone WHERE workflow_id = %s AND key = 'k'",
                       [scope.workflow_id])
        assert cursor.fetchall() == [(last,)]
    assert_exact()
    assert list(WorkflowStateEvent.objects.filter(key="k", operation="delete").order_by("old_version")
                .values_list("old_version", flat=True)) == [2, last]
    state_set(scope=scope, key="k", value=4)
    assert state_get(scope=scope, key="k").version == last + 1


def test_save_never_moves_a_workflow_to_another_organization_so_its_usage_stays(scope, workflow, org, other_org):
    # Rows never change organization (the tables shard by it, docs/scaling.md): save() refuses. The
    # move is a copy then a delete (keeperstate/workflows/move.py, tests/workflows/test_move.py).
    from keeperstate.core.sharding import OrganizationChanged

    state_set(scope=scope, key="a", value="abc")
    state_set(scope=scope, key="b", value=1)

    workflow.organization = other_org
    with pytest.raises(OrganizationChanged, match="cannot be moved"):
        workflow.save()

    assert_exact()
    assert (org_usage(org.id).live_keys, org_usage(org.id).stored_bytes) == (2, 6)
    assert org_usage(other_org.id).live_keys == 0


def test_deleting_workflows_and_organizations_takes_their_usage(scope, workflow, org):
    other = make_workflow(org, name="other")
    state_set(scope=scope, key="a", value=1)
    state_set(scope=StateScope(org.id, other.id), key="b", value=1)

    delete_workflow_by_sql(workflow)
    assert_exact()
    other.delete()
    assert_exact()
    state_set(scope=StateScope(org.id, make_workflow(org, name="third").id), key="c", value=1)
    Organization.objects.filter(pk=org.pk).delete()

    assert counted() == ({}, {})
    with connection.cursor() as cursor:
        cursor.execute("SELECT count(*) FROM workflow_state_usage")
        assert cursor.fetchone()[0] == 0


def test_an_expired_key_frees_its_slot_without_a_writer_at_expiry(scope, settings):
    settings.KEEPERSTATE_MAX_KEYS_PER_WORKFLOW = 5
    for i in range(5):
        state_set(scope=scope, key=f"k{i}", value=i, ttl=60)
    with pytest.raises(StateKeyLimit):
        state_set(scope=scope, key="new", value=1)

    expire(scope, "k3")  # time passes; nobody writes
    write = state_set(scope=scope, key="new", value=1)

    assert write.created
    assert not state_get(scope=scope, key="k3").exists
    # The expired row was reclaimed as the sweeper would: its version lives on, the history says so.
    reclaimed = WorkflowStateEvent.objects.get(key="k3", operation="delete")
    assert (reclaimed.actor, reclaimed.old_version) == ("sweeper", 2)
    state_delete(scope=scope, key="new")
    assert state_set(scope=scope, key="k3", value=1).version == 3
    assert_exact()


def test_a_refused_write_reports_live_keys_not_rows(scope, settings):
    settings.KEEPERSTATE_MAX_KEYS_PER_WORKFLOW = 3
    for i in range(3):
        state_set(scope=scope, key=f"k{i}", value=i)

    with pytest.raises(StateKeyLimit) as info:
        state_set(scope=scope, key="one-more", value=1)

    assert info.value.details == {"limit": 3, "live": 3}
    assert_exact()


def test_expired_keys_elsewhere_in_the_organization_free_budget(org, settings):
    settings.KEEPERSTATE_ORG_MAX_KEYS = 4
    a = StateScope(org.id, make_workflow(org, name="a").id)
    b = StateScope(org.id, make_workflow(org, name="b").id)
    for i in range(4):
        state_set(scope=a, key=f"k{i}", value=i, ttl=60)
    with pytest.raises(StateOrgBudget):
        state_set(scope=b, key="x", value=1)

    expire(a, "k0")
    expire(a, "k1")

    assert state_set(scope=b, key="x", value=1).created
    assert state_set(scope=b, key="y", value=1).created
    with pytest.raises(StateOrgBudget) as info:
        state_set(scope=b, key="z", value=1)
    assert info.value.details["used"] == 4
    assert_exact()


def test_reviving_an_expired_key_at_the_ceiling_needs_no_free_slot(scope, settings):
    settings.KEEPERSTATE_MAX_KEYS_PER_WORKFLOW = 3
    for i in range(3):
        state_set(scope=scope, key=f"k{i}", value=i, ttl=60)
    expire(scope, "k2")

    write = state_set(scope=scope, key="k2", value="back")

    assert (write.created, write.version) == (True, 3)  # expire() itself moved it to 2
    with pytest.raises(StateKeyLimit):
        state_set(scope=scope, key="k3", value=1)


def test_org_usage_reads_the_counters_less_expired_rows(scope):
    state_set(scope=scope, key="a", value=1)
    state_set(scope=scope, key="b", value=22, ttl=60)
    expire(scope, "b")

    usage = org_usage(scope.organization_id)

    assert (usage.live_keys, usage.stored_bytes) == (1, 3)
    assert type(usage.live_keys) is int  # JSON numbers, not Decimal text
    assert type(usage.stored_bytes) is int
