"""Real concurrency: threads with their own connections, released together by a barrier."""

from __future__ import annotations

import threading
from typing import Any

import pytest
from django.db import connection

from keeperstate.state.errors import StateKeyLimit, StateVersionConflict
from keeperstate.state.models import WorkflowState
from keeperstate.state.store import state_get, state_set
from tests.threads import run_together

pytestmark = [pytest.mark.django_db(transaction=True), pytest.mark.concurrency]

WRITERS = 16


def test_concurrent_cas_on_one_version_has_exactly_one_winner(scope):
    state_set(scope=scope, key="cursor", value=0)

    results = run_together(WRITERS, lambda i: state_set(scope=scope, key="cursor", value=i, expected_version=1))

    winners = [i for i, r in enumerate(results) if not isinstance(r, Exception)]
    conflicts = [r for r in results if isinstance(r, StateVersionConflict)]
    assert len(winners) == 1
    assert len(conflicts) == WRITERS - 1
    assert all(c.details == {"expected": 1, "current": 2} for c in conflicts)
    entry = state_get(scope=scope, key="cursor")
    assert (entry.version, entry.value) == (2, winners[0])


def test_cas_increments_lose_no_update(scope):
    """16 writers each add 1 five times by read-then-CAS, retrying on conflict."""
    state_set(scope=scope, key="counter", value=0)
    rounds = 5
    won_versions: list[int] = []
    lock = threading.Lock()

    def increment(_: int) -> int:
        conflicts = 0
        for _round in range(rounds):
            while True:
                entry = state_get(scope=scope, key="counter")
                try:
                    write = state_set(scope=scope, key="counter", value=entry.value + 1, expected_version=entry.version)
                except StateVersionConflict:
                    conflicts += 1
                    continue
                with lock:
                    won_versions.append(write.version)
                break
        return conflicts

    results = run_together(WRITERS, increment)

    assert not [r for r in results if isinstance(r, Exception)]
    entry = state_get(scope=scope, key="counter")
    assert entry.value == WRITERS * rounds
    assert entry.version == WRITERS * rounds + 1
    # Each version was won by exactly one writer.
    assert sorted(won_versions) == list(range(2, WRITERS * rounds + 2))


def test_16_writers_of_25_compare_and_sets_on_one_key_see_only_successes_and_conflicts(scope):
    """Each of 16 writers reads the key and writes it with that version, 25 times, without retrying:
    every answer is a success or a STATE_VERSION_CONFLICT (never STATE_STORAGE_ERROR, which a
    distributed deadlock's cancellation was on Citus), and the key holds exactly the successes."""
    state_set(scope=scope, key="cursor", value=0)
    attempts = 25

    def writer(i: int) -> dict[str, int]:
        answers = {"success": 0, "conflict": 0}
        for _attempt in range(attempts):
            entry = state_get(scope=scope, key="cursor")
            try:
                state_set(scope=scope, key="cursor", value=entry.value + 1, expected_version=entry.version)
                answers["success"] += 1
            except StateVersionConflict:
                answers["conflict"] += 1
        return answers

    results = run_together(WRITERS, writer)

    failed = [r for r in results if isinstance(r, Exception)]
    assert not failed, failed  # a StateStorageError (or any other) would be here
    successes = sum(r["success"] for r in results)
    conflicts = sum(r["conflict"] for r in results)
    entry = state_get(scope=scope, key="cursor")
    print(f"\n{WRITERS} writers x {attempts} compare-and-sets: {successes} successes, {conflicts} conflicts, "
          f"0 storage errors; value {entry.value}, version {entry.version}")
    assert successes + conflicts == WRITERS * attempts
    assert (entry.value, entry.version) == (successes, successes + 1)


def test_concurrent_creators_of_one_key_with_version_zero_have_one_winner(scope):
    results = run_together(WRITERS, lambda i: state_set(scope=scope, key="lock", value=i, expected_version=0))

    winners = [r for r in results if not isinstance(r, Exception)]
    assert len(winners) == 1
    assert winners[0].created is True
    assert all(isinstance(r, StateVersionConflict) for r in results if r is not winners[0])
    assert WorkflowState.objects.get(key="lock").version == 1


def test_concurrent_creators_at_95_keys_end_at_exactly_100(scope):
    for i in range(95):
        state_set(scope=scope, key=f"existing-{i}", value=i)

    results = run_together(WRITERS, lambda i: state_set(scope=scope, key=f"new-{i}", value=i))

    created = [r for r in results if not isinstance(r, Exception)]
    refused = [r for r in results if isinstance(r, StateKeyLimit)]
    assert len(created) == 5
    assert len(refused) == WRITERS - 5
    assert WorkflowState.objects.filter(workflow_id=scope.workflow_id).count() == 100


def test_overwrites_at_the_ceiling_succeed_while_creators_race(scope):
    for i in range(100):
        state_set(scope=scope, key=f"k{i}", value=i)

    def work(i: int) -> Any:
        if i % 2:
            return state_set(scope=scope, key=f"k{i}", value="over")
        return state_set(scope=scope, key=f"new-{i}", value=i)

    results = run_together(WRITERS, work)

    assert all(not isinstance(r, Exception) for i, r in enumerate(results) if i % 2)
    assert all(isinstance(r, StateKeyLimit) for i, r in enumerate(results) if not i % 2)
    assert WorkflowState.objects.count() == 100


def test_concurrent_increments_lose_nothing(scope):
    """16 writers × 200 increments on one absent key end at exactly 3200."""
    from keeperstate.state.store import state_increment

    results = run_together(WRITERS, lambda i: [state_increment(scope=scope, key="hits") for _ in range(200)])

    assert not [r for r in results if isinstance(r, Exception)]
    entry = state_get(scope=scope, key="hits")
    assert (entry.value, entry.version) == (3200, 3200)
    assert sum(w.created for r in results for w in r) == 1


def test_org_key_budget_is_exact_under_concurrent_creators(org, settings):
    from keeperstate.state.errors import StateOrgBudget
    from keeperstate.state.store import StateScope
    from tests.factories import make_workflow

    settings.KEEPERSTATE_ORG_MAX_KEYS = 10
    scopes = [StateScope(org.id, make_workflow(org, name=f"wf{i}").id) for i in range(4)]
    for i in range(6):
        state_set(scope=scopes[i % 4], key=f"seed{i}", value=i)

    results = run_together(WRITERS, lambda i: state_set(scope=scopes[i % 4], key=f"new{i}", value=i))

    assert sum(not isinstance(r, Exception) for r in results) == 4
    assert sum(isinstance(r, StateOrgBudget) for r in results) == WRITERS - 4
    assert WorkflowState.objects.filter(organization=org).count() == 10


def test_org_byte_budget_is_exact_under_concurrent_growth(org, settings):
    from keeperstate.state.errors import StateOrgBudget
    from keeperstate.state.selectors import org_usage
    from keeperstate.state.store import StateScope
    from tests.factories import make_workflow

    settings.KEEPERSTATE_ORG_MAX_BYTES = 1000
    scope_a = StateScope(org.id, make_workflow(org, name="a").id)
    for i in range(WRITERS):
        state_set(scope=scope_a, key=f"k{i}", value="a")  # '"a"': 3 bytes each, 48 in all
    assert org_usage(org.id).stored_bytes == 48

    # Each writer grows its own key to 100 bytes (+97): 48 + 9 × 97 = 921 fits, a tenth would not.
    results = run_together(WRITERS, lambda i: state_set(scope=scope_a, key=f"k{i}", value="x" * 98))

    assert sum(not isinstance(r, Exception) for r in results) == 9
    assert sum(isinstance(r, StateOrgBudget) for r in results) == WRITERS - 9
    assert org_usage(org.id).stored_bytes == 921


def test_concurrent_creators_reclaim_exactly_the_expired_slots(scope):
    """100 keys of which 10 expired (nobody wrote at expiry): 16 creators, exactly 10 get in."""
    from tests.state.test_store import expire

    for i in range(100):
        state_set(scope=scope, key=f"k{i}", value=i, ttl=3600 if i < 10 else None)
    for i in range(10):
        expire(scope, f"k{i}")

    results = run_together(WRITERS, lambda i: state_set(scope=scope, key=f"new-{i}", value=i))

    assert sum(not isinstance(r, Exception) for r in results) == 10
    assert sum(isinstance(r, StateKeyLimit) for r in results) == WRITERS - 10
    assert WorkflowState.objects.filter(workflow_id=scope.workflow_id).count() == 100


def test_counters_stay_exact_under_concurrent_creators_deleters_and_sweepers(org):
    from keeperstate.state.maintenance import sweep_expired
    from keeperstate.state.store import StateScope, state_delete, state_increment
    from tests.factories import make_workflow
    from tests.state.test_usage_counters import assert_exact

    scopes = [StateScope(org.id, make_workflow(org, name=f"wf{i}").id) for i in range(4)]
    with connection.cursor() as cursor:
        for s in scopes:
            cursor.execute(
                "INSERT INTO workflow_state (organization_id, workflow_id, key, value, expires_at) "
                "SELECT %s, %s, 'old' || n, to_jsonb(n), now() - interval '1 minute' FROM generate_series(1, 50) n",
                [org.id, s.workflow_id],
            )

    def work(i: int) -> None:
        s = scopes[i % 4]
        if i % 4 == 3:
            list(sweep_expired(batch_size=20))
            return
        for n in range(30):
            state_set(scope=s, key=f"t{i}-{n}", value="x" * (n % 7 + 1))
            state_increment(scope=s, key=f"c{i % 2}")
            if n % 3 == 0:
                state_delete(scope=s, key=f"t{i}-{n}")

    results = run_together(WRITERS, work)

    assert not [r for r in results if isinstance(r, Exception)]
    assert_exact()


def test_transactions_that_create_three_keys_never_pass_the_budget(org, settings):
    """Far enough from the budget for the fast path, each of 16 transactions creates three keys:
    a transaction's later writes count exactly, so 20 + 48 wanted never pass a budget of 60."""
    from django.db import transaction

    from keeperstate.state.errors import StateOrgBudget
    from keeperstate.state.store import StateScope
    from tests.factories import make_workflow
    from tests.state.test_usage_counters import assert_exact

    settings.KEEPERSTATE_ORG_MAX_KEYS = 60
    scopes = [StateScope(org.id, make_workflow(org, name=f"wf{i}").id) for i in range(WRITERS)]
    for i in range(20):
        state_set(scope=scopes[i % WRITERS], key=f"seed{i}", value=i)

    def work(i: int) -> None:
        with transaction.atomic():
            for key in ("a", "b", "c"):
                state_set(scope=scopes[i], key=key, value=i)

    results = run_together(WRITERS, work)

    committed = sum(not isinstance(r, Exception) for r in results)
    assert all(isinstance(r, StateOrgBudget) for r in results if isinstance(r, Exception)), [
        (type(r).__name__, getattr(r, "__cause__", None)) for r in results if isinstance(r, Exception)]
    assert WorkflowState.objects.filter(organization=org).count() == 20 + 3 * committed <= 60
    assert committed == 13  # (60 - 20) // 3: exact, no transaction refused while it would have fit
    assert_exact()
