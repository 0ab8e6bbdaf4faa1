"""The state store against real Postgres: DESIGN.md §6."""

from __future__ import annotations

import pytest
from django.db import connection
from django.test.utils import CaptureQueriesContext

from keeperstate.state import store
from keeperstate.state.errors import (
    StateKeyLimit,
    StateStorageError,
    StateValueTooLarge,
    StateVersionConflict,
)
from keeperstate.state.maintenance import sweep_expired
from keeperstate.state.models import WorkflowState, WorkflowStateEvent
from keeperstate.state.store import StateScope, state_get, state_set
from tests import citus
from tests.factories import make_workflow
from tests.state.crowding import buffers, crowd_after_analyze

pytestmark = pytest.mark.django_db


def delete_workflow_by_sql(workflow) -> None:
    """Delete a workflow as a raw SQL writer would, bypassing Django's cascade."""
    with connection.cursor() as cursor:
        cursor.execute("DELETE FROM workflow_execution WHERE workflow_id = %s", [workflow.id])
        cursor.execute("DELETE FROM workflow WHERE id = %s", [workflow.id])


def expire(scope: StateScope, key: str) -> None:
    """Move a key's expiry into the past (as time passing would)."""
    with connection.cursor() as cursor:
        cursor.execute(
            "UPDATE workflow_state SET expires_at = now() - interval '1 second' WHERE workflow_id = %s AND key = %s",
            [scope.workflow_id, key],
        )


def test_get_miss_returns_version_zero(scope):
    entry = state_get(scope=scope, key="cursor")

    assert entry.as_output() == {"exists": False, "value": None, "version": 0, "expiresAt": None}


def test_set_creates_key_at_version_one(scope):
    write = state_set(scope=scope, key="cursor", value=100)

    assert (write.version, write.created, write.expires_at) == (1, True, None)
    assert state_get(scope=scope, key="cursor").as_output() == {
        "exists": True, "value": 100, "version": 1, "expiresAt": None,
    }


def test_overwrite_bumps_version_and_is_not_created(scope):
    state_set(scope=scope, key="cursor", value=100)

    write = state_set(scope=scope, key="cursor", value=101)

    assert (write.version, write.created) == (2, False)
    assert state_get(scope=scope, key="cursor").value == 101


def test_overwrite_with_same_value_still_bumps_version(scope):
    state_set(scope=scope, key="cursor", value=5)

    assert state_set(scope=scope, key="cursor", value=5).version == 2


def test_key_is_trimmed(scope):
    state_set(scope=scope, key="  cursor  ", value=1)

    assert state_get(scope=scope, key="cursor").exists


def test_values_keep_their_json_type(scope):
    for key, value in {"n": 4219, "f": 1.5, "b": False, "s": "text", "o": {"a": [1, {"b": None}]}, "l": [1]}.items():
        state_set(scope=scope, key=key, value=value)
        assert state_get(scope=scope, key=key).value == value


def test_cas_applies_when_version_matches(scope):
    state_set(scope=scope, key="cursor", value=1)

    write = state_set(scope=scope, key="cursor", value=2, expected_version=1)

    assert write.version == 2
    assert state_get(scope=scope, key="cursor").value == 2


def test_cas_with_stale_version_conflicts_and_writes_nothing(scope):
    state_set(scope=scope, key="cursor", value=1)
    state_set(scope=scope, key="cursor", value=2)

    with pytest.raises(StateVersionConflict) as info:
        state_set(scope=scope, key="cursor", value=99, expected_version=1)

    assert info.value.code == "STATE_VERSION_CONFLICT"
    assert info.value.details == {"expected": 1, "current": 2}
    assert state_get(scope=scope, key="cursor").as_output()["value"] == 2
    assert state_get(scope=scope, key="cursor").version == 2


def test_cas_version_as_text_from_a_reference(scope):
    state_set(scope=scope, key="cursor", value=1)

    assert state_set(scope=scope, key="cursor", value=2, expected_version="1").version == 2


def test_expected_version_zero_creates_absent_key(scope):
    write = state_set(scope=scope, key="cursor", value=1, expected_version=0)

    assert (write.version, write.created) == (1, True)


def test_expected_version_zero_on_present_key_conflicts(scope):
    state_set(scope=scope, key="cursor", value=1)

    with pytest.raises(StateVersionConflict) as info:
        state_set(scope=scope, key="cursor", value=2, expected_version=0)

    assert info.value.details == {"expected": 0, "current": 1}
    assert state_get(scope=scope, key="cursor").value == 1


def test_cas_on_absent_key_with_nonzero_version_conflicts(scope):
    with pytest.raises(StateVersionConflict) as info:
        state_set(scope=scope, key="cursor", value=1, expected_version=3)

    assert info.value.details == {"expected": 3, "current": 0}
    assert not WorkflowState.objects.exists()


def test_state_is_isolated_between_workflows_and_organizations(scope, workflow, other_org):
    sibling = make_workflow(workflow.organization, name="Sibling")
    foreign = make_workflow(other_org, name="Foreign")
    sibling_scope = StateScope(organization_id=sibling.organization_id, workflow_id=sibling.id)
    foreign_scope = StateScope(organization_id=other_org.id, workflow_id=foreign.id)
    state_set(scope=scope, key="cursor", value="mine")

    assert not state_get(scope=sibling_scope, key="cursor").exists
    assert not state_get(scope=foreign_scope, key="cursor").exists
    state_set(scope=foreign_scope, key="cursor", value="theirs")
    assert state_get(scope=scope, key="cursor").value == "mine"


def test_scope_mixing_another_orgs_id_is_refused(workflow, other_org):
    # A scope whose organization is not the workflow's can never write: the composite
    # foreign key (workflow, organization) refuses it.
    bad = StateScope(organization_id=other_org.id, workflow_id=workflow.id)

    with pytest.raises(StateStorageError):
        state_set(scope=bad, key="cursor", value=1)

    assert not WorkflowState.objects.exists()


def test_ttl_sets_expiry(scope):
    write = state_set(scope=scope, key="k", value=1, ttl=60)

    assert write.expires_at is not None
    assert state_get(scope=scope, key="k").as_output()["expiresAt"] == write.expires_at.isoformat()


def test_each_write_sets_expiry_afresh(scope):
    state_set(scope=scope, key="k", value=1, ttl=60)

    assert state_set(scope=scope, key="k", value=2).expires_at is None


def test_ttl_is_clamped_to_365_days(scope):
    write = state_set(scope=scope, key="k", value=1, ttl=10**9)
    with connection.cursor() as cursor:
        cursor.execute("SELECT expires_at - now() FROM workflow_state WHERE key = 'k'")
        remaining = cursor.fetchone()[0]

    assert remaining.days == 365
    assert write.expires_at is not None


def test_expired_key_is_invisible(scope):
    state_set(scope=scope, key="k", value=1, ttl=60)
    expire(scope, "k")

    assert state_get(scope=scope, key="k").as_output() == {
        "exists": False, "value": None, "version": 0, "expiresAt": None,
    }


def test_set_revives_expired_key_as_created_with_a_new_version(scope):
    state_set(scope=scope, key="k", value=1, ttl=60)
    expire(scope, "k")  # the update moves the version to 2

    write = state_set(scope=scope, key="k", value=2)

    assert write.created is True
    assert write.version == 3
    assert state_get(scope=scope, key="k").value == 2


def test_expected_version_zero_writes_over_an_expired_key(scope):
    state_set(scope=scope, key="k", value=1, ttl=60)
    expire(scope, "k")

    assert state_set(scope=scope, key="k", value=2, expected_version=0).created is True


def test_sweep_deletes_expired_rows_only(scope):
    state_set(scope=scope, key="old", value=1, ttl=60)
    state_set(scope=scope, key="live", value=2, ttl=3600)
    state_set(scope=scope, key="forever", value=3)
    expire(scope, "old")

    assert sum(sweep_expired(batch_size=10)) == 1
    assert sorted(WorkflowState.objects.values_list("key", flat=True)) == ["forever", "live"]


def test_sweep_works_in_batches(scope):
    for i in range(5):
        state_set(scope=scope, key=f"k{i}", value=i, ttl=60)
        expire(scope, f"k{i}")

    assert list(sweep_expired(batch_size=2)) == [2, 2, 1]


def test_version_is_not_reused_after_sweep(scope):
    state_set(scope=scope, key="k", value=1, ttl=60)
    state_set(scope=scope, key="k", value=2, ttl=60)
    expire(scope, "k")  # version 3
    list(sweep_expired())

    write = state_set(scope=scope, key="k", value=3)

    assert (write.version, write.created) == (4, True)
    with pytest.raises(StateVersionConflict):
        state_set(scope=scope, key="k", value=4, expected_version=3)


def test_version_is_not_reused_after_delete(scope):
    state_set(scope=scope, key="k", value=1)
    state_set(scope=scope, key="k", value=2)
    WorkflowState.objects.filter(key="k").delete()

    assert state_set(scope=scope, key="k", value=3).version == 3


def test_value_of_exactly_8192_bytes_is_accepted(scope):
    value = "x" * (8192 - 2)  # the JSON text includes the two quotes

    state_set(scope=scope, key="big", value=value)

    assert state_get(scope=scope, key="big").value == value


def test_value_of_8193_bytes_is_rejected_and_nothing_written(scope):
    with pytest.raises(StateValueTooLarge) as info:
        state_set(scope=scope, key="big", value="x" * (8193 - 2))

    assert info.value.code == "STATE_VALUE_TOO_LARGE"
    # it points at an action the product has (HTTP Request), never at one it lacks
    assert "HTTP Request" in info.value.message
    assert "Database Query" not in info.value.message
    assert not WorkflowState.objects.exists()


def test_size_counts_utf8_bytes(scope):
    with pytest.raises(StateValueTooLarge):
        state_set(scope=scope, key="big", value="é" * 4096)  # 8192 bytes + 2 quotes


def test_ceiling_allows_exactly_100_keys(scope):
    for i in range(100):
        state_set(scope=scope, key=f"k{i}", value=i)

    with pytest.raises(StateKeyLimit) as info:
        state_set(scope=scope, key="k100", value=100)

    assert info.value.code == "STATE_KEY_LIMIT"
    assert WorkflowState.objects.count() == 100


def test_overwrite_at_the_ceiling_succeeds(scope):
    for i in range(100):
        state_set(scope=scope, key=f"k{i}", value=i)

    assert state_set(scope=scope, key="k7", value="new").version == 2


def test_expired_key_frees_a_slot(scope):
    for i in range(100):
        state_set(scope=scope, key=f"k{i}", value=i, ttl=60)
    expire(scope, "k0")

    assert state_set(scope=scope, key="k100", value=100).created is True


def test_expired_key_can_be_revived_at_the_ceiling_only_if_a_slot_is_free(scope):
    for i in range(100):
        state_set(scope=scope, key=f"k{i}", value=i, ttl=60)
    expire(scope, "k0")
    state_set(scope=scope, key="k100", value=100)

    with pytest.raises(StateKeyLimit):
        state_set(scope=scope, key="k0", value="back")


def test_write_records_the_execution(scope, workflow):
    from keeperstate.executions.models import WorkflowExecution

    execution = WorkflowExecution.objects.create(workflow=workflow)
    run_scope = StateScope(scope.organization_id, scope.workflow_id, execution.id)

    state_set(scope=run_scope, key="cursor", value=1)

    assert WorkflowState.objects.get(key="cursor").updated_by_execution_id == execution.id


def _hot_updates_of_state() -> int:
    """Heap-only updates of workflow_state in this transaction: no index entry was written."""
    with connection.cursor() as cursor:
        cursor.execute("SELECT pg_stat_get_xact_tuples_hot_updated('workflow_state'::regclass)")
        return cursor.fetchone()[0]


@citus.STATISTICS
def test_each_run_overwrites_its_cursor_without_touching_an_index(scope, workflow):
    """Every run records a new execution on the row; that column has no index (nor key check),
    so the overwrite stays a heap-only (HOT) update instead of adding to every index."""
    from keeperstate.executions.models import WorkflowExecution

    runs = [WorkflowExecution.objects.create(workflow=workflow) for _ in range(3)]
    state_set(scope=StateScope(scope.organization_id, scope.workflow_id, runs[0].id), key="cursor", value=100)
    before = _hot_updates_of_state()

    for block, run in ((101, runs[1]), (102, runs[2])):
        state_set(scope=StateScope(scope.organization_id, scope.workflow_id, run.id), key="cursor", value=block)

    assert _hot_updates_of_state() == before + 2
    assert WorkflowState.objects.get(key="cursor").updated_by_execution_id == runs[2].id


def test_an_execution_deleted_alone_leaves_the_state_it_wrote(scope, workflow):
    from keeperstate.executions.models import WorkflowExecution

    execution = WorkflowExecution.objects.create(workflow=workflow)
    state_set(scope=StateScope(scope.organization_id, scope.workflow_id, execution.id), key="cursor", value=1)

    execution_id = execution.id
    execution.delete()  # as admin's delete action does

    row = WorkflowState.objects.get(key="cursor")
    assert (row.value, row.version, row.updated_by_execution_id) == (1, 1, execution_id)
    assert state_get(scope=scope, key="cursor").value == 1


def the_one_statement(queries: CaptureQueriesContext) -> str:
    """The only statement the store sent (the test's transaction adds savepoints around it)."""
    sent = [q["sql"] for q in queries if "SAVEPOINT" not in q["sql"]]
    assert len(sent) == 1, sent
    return sent[0]


def test_a_new_key_is_set_in_one_call_that_creates_it(scope):
    with CaptureQueriesContext(connection) as queries:
        write = state_set(scope=scope, key="new", value=1)

    assert "keeperstate_set_key" in the_one_statement(queries)
    assert (write.created, write.version) == (True, 1)


@pytest.mark.parametrize("prepared", [True, False], ids=["prepared", "not prepared"])
@pytest.mark.parametrize("expected", [None, 1], ids=["set", "cas"])
def test_an_overwrite_is_the_one_function_call_whatever_the_connection_knows(scope, monkeypatch, expected, prepared):
    state_set(scope=scope, key="cursor", value=1)
    state_get(scope=scope, key="cursor")
    monkeypatch.setitem(connection.settings_dict["OPTIONS"], "server_side_binding", prepared)

    with CaptureQueriesContext(connection) as queries:
        write = state_set(scope=scope, key="cursor", value=2, expected_version=expected)

    assert "keeperstate_set_key" in the_one_statement(queries)
    assert (write.created, write.version, state_get(scope=scope, key="cursor").value) == (False, 2, 2)


def test_a_key_deleted_by_another_writer_is_created_again_exactly_once(scope, workflow):
    state_set(scope=scope, key="cursor", value=1)
    with connection.cursor() as cursor:  # a writer that is not the store, e.g. a SQL console
        cursor.execute("DELETE FROM workflow_state WHERE workflow_id = %s AND key = 'cursor'", [workflow.id])

    write = state_set(scope=scope, key="cursor", value=2)

    assert (write.created, write.version) == (True, 2)  # the tombstone's version goes on
    assert state_get(scope=scope, key="cursor").value == 2
    operations = list(WorkflowStateEvent.objects.filter(key="cursor").order_by("created_at", "id")
                      .values_list("operation", "new_version"))
    assert operations == [("insert", 1), ("delete", None), ("insert", 2)]
    # and the next Set of it is the overwrite again
    assert state_set(scope=scope, key="cursor", value=3).version == 3


def test_compare_and_set_never_creates_and_conflicts_on_a_missing_key(scope):
    state_set(scope=scope, key="k", value=1)

    with pytest.raises(StateVersionConflict):
        state_set(scope=scope, key="gone", value=1, expected_version=1)
    assert state_set(scope=scope, key="k", value=2, expected_version=1).version == 2
    assert not WorkflowState.objects.filter(key="gone").exists()


def test_write_after_workflow_deleted_is_a_storage_error(scope, workflow):
    workflow.delete()

    with pytest.raises(StateStorageError) as info:
        state_set(scope=scope, key="cursor", value=1)

    assert info.value.code == "STATE_STORAGE_ERROR"
    assert "psycopg" not in info.value.message
    assert "violates" not in info.value.message
    assert not WorkflowState.objects.exists()


# --- a key is looked up by its key, in a workflow the statistics do not know yet (migration 0022) --

_WRITE = {"ttl": None, "execution": None, **store._limits(False)}


@citus.PLAN
@pytest.mark.parametrize(("statement", "extra", "most"), [
    # the row's few pages; an increment adds its history event and usage rows (triggers)
    (store.GET_SQL, {}, 12),
    (store.INCREMENT_SQL, {"by": 1, **_WRITE}, 40),
    (store.SET_SQL, {"value": "2", "expected": None, **_WRITE}, 40),
    (store.SET_SQL, {"value": "2", "expected": 1, **_WRITE}, 40),
], ids=["get", "increment", "overwrite", "cas"])
def test_a_lookup_reads_its_key_not_every_key_of_its_workflow(scope, other_org, statement, extra, most):
    # given a workflow of 20,000 keys, written after an ANALYZE that saw only another
    # organization's: the planner takes the organization and the workflow for a row each, as it
    # does new ones
    crowd_after_analyze(
        "workflow_state",
        "INSERT INTO workflow_state (organization_id, workflow_id, key, value)"
        " SELECT %s, %s, 'key-' || g, '1'::jsonb FROM generate_series(1, %s) g",
        scope, other_org, make_workflow(other_org).id,
    )
    params = {"org": scope.organization_id, "wf": scope.workflow_id, **extra}
    buffers(statement, {**params, "key": "key-1"})  # the triggers' plans made, the catalog cached

    # when the store reads or writes one of them, planned for these values as each connection's
    # first calls of a statement are
    touched = buffers(statement, {**params, "key": "key-777"})

    # then it read that key's pages, not the workflow's 20,000 rows through an index that leads
    # with the organization or the workflow alone (346 and 361 pages before migration 0022)
    assert touched < most
    assert state_get(scope=scope, key="key-777").value == (2 if extra else 1)  # each write makes it 2
