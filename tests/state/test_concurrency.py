"""Real concurrency: threads with their own connections, released together by a barrier."""

from __future__ import annotations

import threading
from collections.abc import Callable
from typing import Any

import pytest
from django.db import connection

from keeperstate.models import WorkflowState
from keeperstate.state.errors import StateKeyLimit, StateVersionConflict
from keeperstate.state.store import state_get, state_set

pytestmark = [pytest.mark.django_db(transaction=True), pytest.mark.concurrency]

WRITERS = 16


def run_together(count: int, work: Callable[[int], Any]) -> list[Any]:
    """Run work(i) in `count` threads started at once; return each result or exception."""
    barrier = threading.Barrier(count)
    results: list[Any] = [None] * count

    def target(i: int) -> None:
        try:
            barrier.wait(timeout=30)
            results[i] = work(i)
        except Exception as exc:  # collected and asserted by the test
            results[i] = exc
        finally:
            connection.close()

    threads = [threading.Thread(target=target, args=(i,)) for i in range(count)]
    for t in threads:
        t.start()
    for t in threads:
        t.join(timeout=60)
    return results


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
