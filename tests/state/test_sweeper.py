"""The sweeper at scale: several sweepers share the work and delete each expired row once."""

from __future__ import annotations

import pytest
from django.db import connection

from keeperstate.state.maintenance import sweep_expired
from keeperstate.state.models import WorkflowState, WorkflowStateEvent
from keeperstate.state.store import state_set
from tests.factories import make_workflow
from tests.threads import run_together

EXPIRED = 20_000
LIVE = 500


@pytest.mark.django_db(transaction=True)
@pytest.mark.concurrency
def test_three_sweepers_remove_20000_expired_rows_exactly_once(org, scope):
    # given: live rows with and without a TTL, and 20,000 expired rows over 40 workflows (written
    # after the live ones: a write that passes the budget would reclaim expired rows itself)
    for i in range(LIVE):
        state_set(scope=scope, key=f"live{i % 100}", value=i, ttl=3600 if i % 2 else None)
    workflows = [make_workflow(org, name=f"wf{i}") for i in range(40)]
    with connection.cursor() as cursor:
        cursor.execute(
            """
            INSERT INTO workflow_state (organization_id, workflow_id, key, value, version, expires_at)
            SELECT %s, (%s::uuid[])[1 + n %% 40], 'k' || n, to_jsonb(n), 1, now() - interval '1 minute'
              FROM generate_series(1, %s) AS n
            """,
            [org.id, [wf.id for wf in workflows], EXPIRED],
        )
    live_before = sorted(WorkflowState.objects.filter(workflow_id=scope.workflow_id).values_list("key", "version"))

    # when: three sweepers run at once
    results = run_together(3, lambda _: list(sweep_expired(batch_size=500)))

    # then: every expired row went exactly once, and nothing live was touched
    assert not [r for r in results if isinstance(r, Exception)]
    assert sum(sum(batches) for batches in results) == EXPIRED
    assert all(batches for batches in results), "each sweeper took a share"
    assert not WorkflowState.objects.filter(workflow__in=workflows).exists()
    live_after = sorted(WorkflowState.objects.filter(workflow_id=scope.workflow_id).values_list("key", "version"))
    assert live_after == live_before
    deletes = WorkflowStateEvent.objects.filter(operation="delete", actor="sweeper")
    assert deletes.count() == EXPIRED
    assert deletes.values("workflow_id", "key").distinct().count() == EXPIRED
    with connection.cursor() as cursor:
        cursor.execute("SELECT count(*), min(last_version) FROM workflow_state_tombstone")
        assert cursor.fetchone() == (EXPIRED, 1)
