"""A workflow moved to another organization (keeperstate/workflows/move.py, ADR 0059): copy then
delete in one transaction. The monitor's cursor keeps its value and version (a compare-and-set
with the old version still wins), the key's history reads the same, the usage counters are exact
in both organizations, runs and versions go along, and nothing stays behind; every refusal
leaves every table as it was."""

from __future__ import annotations

import threading
import time

import pytest
from django.db import connection

from keeperstate.audit.models import AuditEvent
from keeperstate.core.sharding import OrganizationChanged
from keeperstate.executions.models import WorkflowExecution
from keeperstate.state.errors import StateStorageError
from keeperstate.state.models import WorkflowStateEvent
from keeperstate.state.selectors import org_usage
from keeperstate.state.store import StateScope, state_delete, state_get, state_set
from keeperstate.workflows.models import Workflow, WorkflowVersion
from keeperstate.workflows.move import (
    MoveNotPermitted,
    MoveOverBudget,
    MoveRunInProgress,
    MoveSameOrganization,
    move_workflow,
)
from tests.factories import make_user, make_workflow
from tests.state.test_store import expire
from tests.state.test_usage_counters import assert_exact, counted
from tests.threads import run_together

pytestmark = pytest.mark.django_db

# Every table that holds a workflow's rows, with its workflow column.
TABLES = {
    "workflow": "id",
    "workflow_state": "workflow_id",
    "workflow_state_event": "workflow_id",
    "workflow_state_tombstone": "workflow_id",
    "workflow_state_history_due": "workflow_id",
    "workflow_state_usage": "workflow_id",
    "workflow_execution": "workflow_id",
    "workflow_version": "workflow_id",
}


def rows_of(workflow_id, organization_id) -> dict[str, list[tuple]]:
    """Every row of the workflow in one organization, table by table, organization column left out."""
    found = {}
    with connection.cursor() as cursor:
        for table, column in TABLES.items():
            cursor.execute(f"SELECT * FROM {table} WHERE organization_id = %s AND {column} = %s",
                           [organization_id, workflow_id])
            names = [d.name for d in cursor.description]
            keep = [i for i, name in enumerate(names) if name != "organization_id"]
            found[table] = sorted((tuple(row[i] for i in keep) for row in cursor.fetchall()), key=repr)
    return found


def everything() -> dict[str, list[tuple]]:
    """Every row of every table a move touches, and the usage counters: for "nothing changed"."""
    dump = {}
    with connection.cursor() as cursor:
        for table in [*TABLES, "organization_state_usage"]:
            cursor.execute(f"SELECT * FROM {table}")
            dump[table] = sorted(cursor.fetchall(), key=repr)
    return dump


def history(organization_id, workflow_id, key) -> list[tuple]:
    with connection.cursor() as cursor:
        cursor.execute(
            "SELECT id, operation, old_value, new_value, old_version, new_version, execution_id, actor, created_at "
            "FROM workflow_state_event WHERE organization_id = %s AND workflow_id = %s AND key = %s "
            "ORDER BY created_at, id",
            [organization_id, workflow_id, key],
        )
        return cursor.fetchall()


@pytest.fixture
def mover(org, other_org):
    """An admin of both organizations."""
    user = make_user("mover", org, role="admin")
    user.memberships.create(organization=other_org, role="owner")
    return user


@pytest.fixture
def monitored(scope, workflow, user):
    """The monitor's state: a cursor moved on 20 times (a due mark at version 16), a key deleted
    and written again (a tombstone), one expiring, one expired; a finished run; two versions."""
    for block in range(20):
        state_set(scope=scope, key="cursor", value={"block": block})
    state_set(scope=scope, key="seen", value=[1, 2])
    state_delete(scope=scope, key="seen")
    state_set(scope=scope, key="seen", value=[3])
    state_set(scope=scope, key="lease", value="me", ttl=3600)
    state_set(scope=scope, key="old", value="gone soon", ttl=3600)
    expire(scope, "old")
    WorkflowExecution.objects.create(workflow=workflow, status="success", node_results={"n1": {"success": True}})
    for number in (1, 2):
        WorkflowVersion.objects.create(workflow=workflow, number=number, name=f"v{number}", summary="saved",
                                       created_by=user)
    return scope


def test_the_cursor_keeps_value_and_version_and_cas_with_the_old_version_wins(monitored, workflow, other_org, mover):
    before = state_get(scope=monitored, key="cursor")

    moved = move_workflow(workflow, other_org, by_user=mover)

    assert (moved.pk, moved.organization_id) == (workflow.pk, other_org.pk)
    new_scope = StateScope(other_org.id, workflow.id)
    after = state_get(scope=new_scope, key="cursor")
    assert (after.value, after.version, after.expires_at) == (before.value, before.version, before.expires_at)
    write = state_set(scope=new_scope, key="cursor", value={"block": 20}, expected_version=before.version)
    assert write.version == before.version + 1
    # The deleted-and-recreated key continues from its tombstone, as it would have in place.
    assert state_get(scope=new_scope, key="seen").version == 2
    state_delete(scope=new_scope, key="seen")
    assert state_set(scope=new_scope, key="seen", value=[4]).version == 3


def test_everything_moves_as_it_was_and_nothing_stays_behind(monitored, workflow, org, other_org, mover):
    before = rows_of(workflow.id, org.id)
    assert all(before[table] for table in TABLES), "the fixture fills every table"

    move_workflow(workflow, other_org, by_user=mover)

    assert rows_of(workflow.id, other_org.id) == before
    assert rows_of(workflow.id, org.id) == {table: [] for table in TABLES}
    assert WorkflowExecution.objects.get(workflow_id=workflow.id).node_results == {"n1": {"success": True}}
    assert list(WorkflowVersion.objects.filter(workflow_id=workflow.id).values_list("number", flat=True)) == [2, 1]
    assert Workflow.objects.filter(pk=workflow.pk).count() == 1


def test_history_is_kept_in_order_and_the_move_writes_no_event(monitored, workflow, org, other_org, mover):
    before = {key: history(org.id, workflow.id, key) for key in ("cursor", "seen", "lease", "old")}
    events = WorkflowStateEvent.objects.count()

    move_workflow(workflow, other_org, by_user=mover)

    assert {key: history(other_org.id, workflow.id, key) for key in before} == before
    assert [e[5] for e in before["cursor"]] == list(range(1, 21))  # versions 1…20, in order
    assert WorkflowStateEvent.objects.count() == events
    assert not WorkflowStateEvent.objects.filter(organization_id=org.id).exists()


def test_usage_counters_are_exact_in_both_organizations(monitored, workflow, org, other_org, mover):
    stay = make_workflow(org, name="stays")
    state_set(scope=StateScope(org.id, stay.id), key="k", value="abc")
    there = make_workflow(other_org, name="there")
    state_set(scope=StateScope(other_org.id, there.id), key="k", value=12345)
    moving_keys, moving_bytes = counted()[1][org.id]
    target_keys, target_bytes = counted()[1][other_org.id]

    move_workflow(workflow, other_org, by_user=mover)

    assert_exact()  # counters == a recount of workflow_state, by workflow and by organization
    workflows, orgs = counted()
    assert orgs[org.id] == (1, 5)
    assert orgs[other_org.id] == (target_keys + moving_keys - 1, target_bytes + moving_bytes - 5)
    assert workflows[workflow.id] == 4  # cursor, seen, lease and the expired "old"
    assert org_usage(other_org.id).live_keys == 1 + 3


def test_the_old_organization_sees_the_move_in_its_audit_log_and_so_does_the_new(
        monitored, workflow, org, other_org, mover):
    move_workflow(workflow, other_org, by_user=mover)

    logged = AuditEvent.objects.filter(action="workflow.move", target_id=str(workflow.id))
    assert sorted(logged.values_list("organization_id", flat=True)) == sorted([org.id, other_org.id])
    assert {e.details["from"] for e in logged} == {org.id}
    assert {e.actor_id for e in logged} == {mover.id}


def test_save_still_refuses_a_changed_organization(workflow, other_org):
    workflow.organization = other_org
    with pytest.raises(OrganizationChanged, match="cannot be moved"):
        workflow.save()


def test_a_moved_workflow_saves_again(monitored, workflow, other_org, mover):
    moved = move_workflow(workflow, other_org, by_user=mover)
    moved.name = "renamed"
    moved.save()
    workflow.refresh_from_db()  # the caller's instance finds the moved row: the id is the same
    assert (workflow.organization_id, workflow.name) == (other_org.id, "renamed")


# --- refusals: each leaves every table as it was -----------------------------------------------


def test_same_organization_is_refused(monitored, workflow, org, mover):
    before = everything()
    with pytest.raises(MoveSameOrganization) as refused:
        move_workflow(workflow, org, by_user=mover)
    assert refused.value.code == "MOVE_SAME_ORGANIZATION"
    assert everything() == before


@pytest.mark.parametrize(("role_here", "role_there"), [("member", "owner"), ("admin", "member"), ("owner", None)])
def test_a_user_not_admin_of_both_is_refused(monitored, workflow, org, other_org, role_here, role_there):
    user = make_user("half", org, role=role_here)
    if role_there:
        user.memberships.create(organization=other_org, role=role_there)
    before = everything()
    with pytest.raises(MoveNotPermitted) as refused:
        move_workflow(workflow, other_org, by_user=user)
    assert (refused.value.code, refused.value.status_code) == ("MOVE_NOT_PERMITTED", 403)
    assert everything() == before


@pytest.mark.parametrize("status", ["queued", "running"])
def test_a_queued_or_running_run_is_refused(monitored, workflow, other_org, mover, status):
    WorkflowExecution.objects.create(workflow=workflow, status=status)
    before = everything()
    with pytest.raises(MoveRunInProgress) as refused:
        move_workflow(workflow, other_org, by_user=mover)
    assert refused.value.code == "MOVE_RUN_IN_PROGRESS"
    assert refused.value.details == {"runs": 1}
    assert "Deactivate the workflow" in refused.value.message
    assert everything() == before


def test_a_target_over_its_key_budget_is_refused(monitored, workflow, other_org, mover, settings):
    there = make_workflow(other_org, name="there")
    for i in range(3):
        state_set(scope=StateScope(other_org.id, there.id), key=f"k{i}", value=i)
    settings.KEEPERSTATE_ORG_MAX_KEYS = 3 + 4 - 1  # the move brings 4 rows
    before = everything()
    with pytest.raises(MoveOverBudget) as refused:
        move_workflow(workflow, other_org, by_user=mover)
    assert refused.value.details == {"limit": "keys", "max": 6, "used": 3, "moving": 4}
    assert everything() == before

    settings.KEEPERSTATE_ORG_MAX_KEYS = 7  # exactly enough
    move_workflow(workflow, other_org, by_user=mover)
    assert_exact()


def test_a_target_over_its_byte_budget_is_refused(monitored, workflow, org, other_org, mover, settings):
    settings.KEEPERSTATE_ORG_MAX_BYTES = counted()[1][org.id][1] - 1
    before = everything()
    with pytest.raises(MoveOverBudget) as refused:
        move_workflow(workflow, other_org, by_user=mover)
    assert refused.value.details["limit"] == "bytes"
    assert everything() == before


def test_the_targets_expired_keys_are_reclaimed_to_make_room(monitored, workflow, other_org, mover, settings):
    there = make_workflow(other_org, name="there")
    there_scope = StateScope(other_org.id, there.id)
    for i in range(3):
        state_set(scope=there_scope, key=f"k{i}", value=i, ttl=60)
        expire(there_scope, f"k{i}")
    settings.KEEPERSTATE_ORG_MAX_KEYS = 4

    move_workflow(workflow, other_org, by_user=mover)

    assert_exact()
    assert counted()[1][other_org.id][0] == 4


def test_a_failure_midway_leaves_nothing_written(monitored, workflow, org, other_org, mover, monkeypatch):
    from keeperstate.workflows import move

    def broken(cursor, **kwargs):
        cursor.execute("SELECT 1/0")

    monkeypatch.setattr(move, "copy_state", broken)
    before = everything()
    with pytest.raises(Exception, match="division by zero"):
        move_workflow(workflow, other_org, by_user=mover)
    assert everything() == before


# --- a State Set racing the move ----------------------------------------------------------------


@pytest.mark.django_db(transaction=True)
@pytest.mark.concurrency
@pytest.mark.parametrize("round_", range(6))
def test_a_set_racing_the_move_is_in_the_moved_state_or_fails_clearly(org, other_org, user, round_):
    mover = make_user("mover", org, role="admin")
    mover.memberships.create(organization=other_org, role="admin")
    workflow = make_workflow(org, user=user)
    old = StateScope(org.id, workflow.id)
    state_set(scope=old, key="cursor", value={"block": 1})
    state_set(scope=old, key="other", value=1)

    def work(i: int):
        if i == 0:
            return move_workflow(Workflow.objects.get(pk=workflow.pk), other_org, by_user=mover)
        # The writer's scope was taken before the move, as a run's or a request's is: an overwrite
        # and a new key, each kept with its outcome.
        outcomes = {}
        for key, value in (("cursor", {"block": 2}), ("fresh", "new key")):
            try:
                outcomes[key] = state_set(scope=old, key=key, value=value)
            except StateStorageError as exc:
                outcomes[key] = exc
        return outcomes

    moved, outcomes = run_together(2, work)

    assert not isinstance(moved, Exception), moved
    assert not isinstance(outcomes, Exception), outcomes
    new = StateScope(other_org.id, workflow.id)
    for key, before in (("cursor", ({"block": 1}, 1)), ("fresh", (None, 0))):
        entry = state_get(scope=new, key=key)
        outcome = outcomes[key]
        if isinstance(outcome, StateStorageError):  # refused, in so many words, and nothing written
            assert "moved to another organization" in outcome.message
            assert (entry.value, entry.version) == before
        else:  # written before the move took its locks: the move carried it
            assert (entry.value, entry.version) == (outcome.value, outcome.version)
    assert not rows_of(workflow.id, org.id)["workflow_state"]
    assert_exact()


# --- writers that read the workflow before the move and write after it ----------------------------


def test_a_state_write_with_the_old_organization_fails_clearly_and_writes_nothing(monitored, workflow, org,
                                                                                   other_org, mover):
    move_workflow(workflow, other_org, by_user=mover)

    for key in ("cursor", "brand-new"):  # an overwrite and a new key
        with pytest.raises(StateStorageError, match="moved to another organization") as refused:
            state_set(scope=monitored, key=key, value=1)
        assert refused.value.code == "STATE_STORAGE_ERROR"
    assert not rows_of(workflow.id, org.id)["workflow_state"]
    assert state_get(scope=StateScope(other_org.id, workflow.id), key="brand-new").exists is False
    assert_exact()


def test_a_run_started_from_the_old_organization_fails_clearly(monitored, workflow, other_org, mover):
    from keeperstate.executions.service import WorkflowDeletedDuringRun, queue_run

    stale = Workflow.objects.get(pk=workflow.pk)
    move_workflow(workflow, other_org, by_user=mover)

    with pytest.raises(WorkflowDeletedDuringRun, match="moved to another organization") as refused:
        queue_run(stale, {}, trigger=WorkflowExecution.Trigger.API)
    assert refused.value.code == "WORKFLOW_DELETED"
    assert WorkflowExecution.objects.filter(workflow_id=workflow.id).count() == 1  # the moved run only


@pytest.mark.django_db(transaction=True)
@pytest.mark.concurrency
def test_a_move_waits_for_a_set_in_flight_and_carries_it(org, other_org, user):
    from django.db import transaction

    mover = make_user("mover", org, role="admin")
    mover.memberships.create(organization=other_org, role="admin")
    workflow = make_workflow(org, user=user)
    old = StateScope(org.id, workflow.id)
    state_set(scope=old, key="cursor", value={"block": 1})
    writing = threading.Event()

    def work(i: int):
        if i == 1:
            with transaction.atomic():  # the write holds its row until this commits
                write = state_set(scope=old, key="cursor", value={"block": 2})
                writing.set()
                time.sleep(1)
            return write
        assert writing.wait(30)
        started = time.monotonic()
        move_workflow(Workflow.objects.get(pk=workflow.pk), other_org, by_user=mover)
        return time.monotonic() - started

    waited, write = run_together(2, work)

    assert waited > 0.5, "the move took the row while a write held it"
    entry = state_get(scope=StateScope(other_org.id, workflow.id), key="cursor")
    assert (entry.value, entry.version) == ({"block": 2}, write.version) == ({"block": 2}, 2)
    assert_exact()


@pytest.mark.django_db(transaction=True)
@pytest.mark.concurrency
def test_a_set_arriving_during_the_move_waits_then_fails_clearly(org, other_org, user, monkeypatch):
    from keeperstate.workflows import move

    mover = make_user("mover", org, role="admin")
    mover.memberships.create(organization=other_org, role="admin")
    workflow = make_workflow(org, user=user)
    old = StateScope(org.id, workflow.id)
    state_set(scope=old, key="cursor", value={"block": 1})
    locked = threading.Event()
    copy = move.copy_state

    def slow_copy(cursor, **kwargs):  # the move holds its locks here for a second
        locked.set()
        time.sleep(1)
        copy(cursor, **kwargs)

    monkeypatch.setattr(move, "copy_state", slow_copy)

    def work(i: int):
        if i == 0:
            return move_workflow(Workflow.objects.get(pk=workflow.pk), other_org, by_user=mover)
        assert locked.wait(30)
        outcomes = []
        for key in ("cursor", "fresh"):  # an overwrite (waits on the row), a new key (on the workflow)
            try:
                outcomes.append(state_set(scope=old, key=key, value={"block": 2}))
            except StateStorageError as exc:
                outcomes.append(exc)
        return outcomes

    moved, outcomes = run_together(2, work)

    assert not isinstance(moved, Exception), moved
    assert all(isinstance(o, StateStorageError) and "moved to another organization" in o.message
               for o in outcomes), outcomes
    new = StateScope(other_org.id, workflow.id)
    entry = state_get(scope=new, key="cursor")
    assert (entry.value, entry.version) == ({"block": 1}, 1)
    assert state_get(scope=new, key="fresh").exists is False
    assert_exact()


def test_a_key_at_a_trimming_version_moves_with_its_version_and_history(scope, workflow, org, other_org, mover):
    # Version 256 is where the history trigger trims a key inline (state/sql.py); the copy's insert
    # reaches it too, and must trim nothing of the key's own history.
    with connection.cursor() as cursor:
        cursor.execute(
            "INSERT INTO workflow_state_tombstone (organization_id, workflow_id, key, last_version) "
            "VALUES (%s, %s, 'cursor', 254)", [org.id, workflow.id])
    state_set(scope=scope, key="cursor", value=1)
    state_set(scope=scope, key="cursor", value=2)
    assert state_get(scope=scope, key="cursor").version == 256
    before = history(org.id, workflow.id, "cursor")

    move_workflow(workflow, other_org, by_user=mover)

    assert state_get(scope=StateScope(other_org.id, workflow.id), key="cursor").version == 256
    assert history(other_org.id, workflow.id, "cursor") == before
    assert_exact()
