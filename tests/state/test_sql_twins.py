"""Each raw statement of the state and its ORM twin select the same rows.

Whether a key is live is said once in SQL (``live()`` / ``expired()`` in keeperstate/state/sql.py:
the store's statements and functions, the counts, the sweeper, the reclaim) and once in the ORM
(``WorkflowStateQuerySet.live()`` / ``.expired()``: the selectors, admin), both on the clock of the
node that holds the key (docs/state.md, "One clock"). A test runs in one transaction, so that
clock's ``now()`` is one instant throughout: rows here expire exactly at it and a microsecond
after it (live for the database, though Python's clock has passed that instant by the time
anything reads it), besides the plain cases, in four workflows.
"""

from __future__ import annotations

from typing import Any

import pytest
from django.db import connection
from django.urls import reverse

from keeperstate.state import store
from keeperstate.state.maintenance import sweep_expired
from keeperstate.state.models import WorkflowState
from keeperstate.state.selectors import count_expired, org_usage, state_entries
from keeperstate.state.store import WRITE_LOCKED_SQL, StateScope, state_delete, state_get, state_increment, state_set
from tests.factories import make_workflow

pytestmark = pytest.mark.django_db

# key: its expiry relative to now() (None: no TTL)
EXPIRIES = {
    "no-ttl": None,
    "in-an-hour": "1 hour",
    "a-moment-after-now": "1 microsecond",
    "exactly-now": "0",
    "an-hour-ago": "-1 hour",
}
LIVE_KEYS = {"no-ttl", "in-an-hour", "a-moment-after-now"}
EXPIRED_KEYS = set(EXPIRIES) - LIVE_KEYS


def key_clock(workflow: Any) -> Any:
    """now() as the node holding the workflow's keys reads it (docs/state.md, "One clock"): on one
    server its transaction's instant; on Citus the shard's worker's, which a plain INSERT would not
    take (Citus computes a modification's now() on the coordinator)."""
    with connection.cursor() as cursor:
        cursor.execute("SELECT now() FROM workflow WHERE organization_id = %s AND id = %s",
                       [workflow.organization_id, workflow.id])
        return cursor.fetchone()[0]


def put(workflow: Any, key: str, expires_in: str | None) -> None:
    # created a day ago, so a revival (which restarts created_at) shows
    with connection.cursor() as cursor:
        cursor.execute(
            "INSERT INTO workflow_state (organization_id, workflow_id, key, value, version, expires_at, created_at) "
            "VALUES (%s, %s, %s, '1'::jsonb, 1, %s + %s::interval, %s - interval '1 day')",
            [workflow.organization_id, workflow.id, key, key_clock(workflow), expires_in, key_clock(workflow)],
        )


@pytest.fixture
def workflows(org, other_org, workflow):
    """Every expiry in four workflows: two of acme's, one soft-deleted (its state is kept), and
    one of another organization."""
    deleted = make_workflow(org, name="Deleted")
    deleted.soft_delete()
    found = [workflow, make_workflow(org, name="Second"), deleted, make_workflow(other_org, name="Theirs")]
    for each in found:
        for key, expires_in in EXPIRIES.items():
            put(each, key, expires_in)
    return found


def ids(queryset: Any) -> set[int]:
    return set(queryset.values_list("pk", flat=True))


def scope_of(row: WorkflowState) -> StateScope:
    return StateScope(organization_id=row.organization_id, workflow_id=row.workflow_id)


def every_row() -> list[WorkflowState]:
    return list(WorkflowState.objects.all())


def test_the_queryset_says_live_or_expired_of_every_row_once(workflows):
    for workflow in workflows:
        rows = WorkflowState.objects.filter(workflow=workflow)
        assert set(rows.live().values_list("key", flat=True)) == LIVE_KEYS
        assert set(rows.expired().values_list("key", flat=True)) == EXPIRED_KEYS


def test_get_finds_exactly_the_live_rows(workflows):
    live = ids(WorkflowState.objects.live())
    for row in every_row():
        assert state_get(scope=scope_of(row), key=row.key).exists == (row.pk in live), row.key


def test_the_locked_path_reads_liveness_as_the_queryset_does(workflows):
    # keeperstate_write_locked, as a create-only Set: a live key is a conflict, any other is written
    live = ids(WorkflowState.objects.live())
    with connection.cursor() as cursor:
        for row in every_row():
            cursor.execute(WRITE_LOCKED_SQL, {
                "org": row.organization_id, "wf": row.workflow_id, "key": row.key, "value": "2", "by": None,
                "ttl": None, "execution": None, "expected": 0, **store._limits(True),
            })
            assert (cursor.fetchone()[0] == "conflict") == (row.pk in live), row.key


@pytest.mark.parametrize(
    "write",
    [
        # the same size: keeperstate_set_key overwrites a live row in place, else the locked path
        pytest.param(lambda scope, key: state_set(scope=scope, key=key, value=2), id="set"),
        # a value that grows: the locked path and its upsert for every row
        pytest.param(lambda scope, key: state_set(scope=scope, key=key, value="longer than 1"), id="set-growing"),
        # keeperstate_increment_key for a live row, else the locked path
        pytest.param(lambda scope, key: state_increment(scope=scope, key=key), id="increment"),
    ],
)
def test_a_write_creates_exactly_the_keys_that_are_not_live(workflows, write):
    live = ids(WorkflowState.objects.live())
    for row in every_row():
        assert write(scope_of(row), row.key).created == (row.pk not in live), row.key


def test_a_write_restarts_created_at_exactly_for_the_rows_that_were_not_live(workflows):
    # keeperstate_write_locked's upsert (a growing value takes the locked path for every row)
    live = ids(WorkflowState.objects.live())
    before = {row.pk: row.created_at for row in every_row()}
    for row in every_row():
        state_set(scope=scope_of(row), key=row.key, value="longer than 1")

    for row in every_row():
        assert (row.created_at == before[row.pk]) == (row.pk in live), row.key


def test_delete_deletes_exactly_the_live_rows(workflows):
    # keeperstate_delete_key
    live = ids(WorkflowState.objects.live())
    for row in every_row():
        assert state_delete(scope=scope_of(row), key=row.key).deleted == (row.pk in live), row.key


def test_count_expired_counts_exactly_the_expired_rows(workflows):
    assert count_expired() == WorkflowState.objects.expired().count() == len(workflows) * len(EXPIRED_KEYS)
    assert WorkflowState.objects.live().count() + count_expired() == WorkflowState.objects.count()


def test_the_sweeper_deletes_exactly_the_expired_rows(workflows):
    live, expired = ids(WorkflowState.objects.live()), ids(WorkflowState.objects.expired())

    swept = sum(sweep_expired(batch_size=3))

    assert swept == len(expired)
    assert ids(WorkflowState.objects.all()) == live


def test_org_usage_counts_exactly_the_live_rows_of_the_organization(workflows, org, other_org):
    for organization in (org, other_org):
        live = WorkflowState.objects.filter(organization=organization).live().count()
        assert org_usage(organization.id).live_keys == live, organization.slug


def reclaim(organization_id: int, workflow_id: Any) -> int:
    with connection.cursor() as cursor:
        cursor.execute("SELECT keeperstate_reclaim_expired(%s, %s, 1000)", [organization_id, workflow_id])
        return cursor.fetchone()[0]


def test_the_reclaim_deletes_exactly_the_expired_rows_of_its_scope(workflows, org):
    # keeperstate_reclaim_expired: what a write past a limit frees, for one workflow, then the organization
    for scope, workflow_id in ((WorkflowState.objects.filter(workflow=workflows[0]), workflows[0].id),
                               (WorkflowState.objects.filter(organization=org), None)):
        before, expired = ids(WorkflowState.objects.all()), ids(scope.expired())

        assert reclaim(org.id, workflow_id) == len(expired)
        assert before - ids(WorkflowState.objects.all()) == expired


def test_the_state_panel_lists_exactly_the_keys_get_finds(workflows):
    for workflow in workflows:
        scope = StateScope(organization_id=workflow.organization_id, workflow_id=workflow.id)
        found = {key for key in EXPIRIES if state_get(scope=scope, key=key).exists}
        assert {entry["key"] for entry in state_entries(scope=scope)} == found


def test_admin_filters_and_shows_liveness_as_the_store_decides_it(workflows, admin_client):
    changelist = reverse("admin:keeperstate_workflowstate_changelist")
    for choice, expected in (("live", WorkflowState.objects.live()), ("expired", WorkflowState.objects.expired())):
        shown = admin_client.get(f"{changelist}?expiry={choice}").context["cl"].queryset
        assert ids(shown) == ids(expected), choice

    for key, css in (("a-moment-after-now", "ks-expiry ttl"), ("exactly-now", "ks-expiry expired")):
        row = WorkflowState.objects.get(workflow=workflows[0], key=key)
        page = admin_client.get(reverse("admin:keeperstate_workflowstate_change", args=[row.pk])).content.decode()
        assert css in page, key
