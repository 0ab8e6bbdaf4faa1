"""What each store operation sends to Postgres, counted rather than timed (DESIGN.md §10).

The speed of a store operation is a ratio that follows the machine (docs/benchmarks.md); what it
costs in round trips, and whether it scans, does not. These tests hold the counts docs/state.md
gives ("How the store stays fast and exact"): a statement sent is a round trip, so each count is
both. Postgres's own per-transaction table statistics (``pg_stat_xact_user_tables``) count the
scans a statement makes, the ones inside the store's functions and triggers included.
"""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

import pytest
from django.db import connection

from keeperstate.state import store
from keeperstate.state.store import StateScope, state_delete, state_get, state_increment, state_set
from tests.factories import make_workflow

pytestmark = pytest.mark.django_db

# Every table a store operation reads or writes, its triggers included.
STATE_TABLES = ("workflow_state", "workflow_state_event", "workflow_state_tombstone", "workflow_state_usage",
                "organization_state_usage", "workflow_state_history_due")
# The tables that grow with an organization's keys, which the tests below fill: a scan of one of
# them would cost more the more keys there are. The usage tables hold a row per workflow and 32
# per organization, where Postgres rightly reads a page or two in whichever way it estimates
# cheaper, which depends on what the suite ran before.
CROWDED = ("workflow_state", "workflow_state_event")


class Sent:
    """The statements the store sent while the block ran: each one is a round trip. The test's
    own transaction wraps the store's in savepoints, which the service does not send."""

    def __init__(self) -> None:
        self.statements: list[str] = []

    def __call__(self, execute: Callable[..., Any], sql: str, params: Any, many: bool, context: dict) -> Any:
        if "SAVEPOINT" not in sql:
            self.statements.append(" ".join(sql.split()))
        return execute(sql, params, many, context)

    def run(self, action: Callable[[], object]) -> None:
        with self:
            action()

    def __enter__(self) -> Sent:
        self._wrapped = connection.execute_wrapper(self)
        self._wrapped.__enter__()
        return self

    def __exit__(self, *exc: object) -> None:
        self._wrapped.__exit__(*exc)


def prepared(monkeypatch) -> None:
    """Prepared statements, as the service runs unless told otherwise (docs/configuration.md);
    tests/pgbouncer runs this suite without them."""
    monkeypatch.setitem(connection.settings_dict["OPTIONS"], "server_side_binding", True)


def scans() -> dict[str, tuple[int, int]]:
    """Sequential and index scans of each state table so far in this transaction."""
    with connection.cursor() as cursor:
        cursor.execute(
            "SELECT relname, seq_scan, coalesce(idx_scan, 0) FROM pg_stat_xact_user_tables WHERE relname = ANY(%s)",
            [list(STATE_TABLES)],
        )
        return {name: (seq, idx) for name, seq, idx in cursor.fetchall()}


def scans_of(action: Callable[[], object]) -> dict[str, tuple[int, int]]:
    """(sequential, index) scans ``action`` made, per state table it touched."""
    before = scans()
    action()
    after = scans()
    made = {name: (after[name][0] - before.get(name, (0, 0))[0], after[name][1] - before.get(name, (0, 0))[1])
            for name in after}
    return {name: counts for name, counts in made.items() if counts != (0, 0)}


# --- one statement each, as docs/state.md counts them -------------------------------------------


def test_a_get_is_one_select_hit_or_miss(scope):
    state_set(scope=scope, key="cursor", value=1)

    with Sent() as hit:
        state_get(scope=scope, key="cursor")
    with Sent() as miss:
        state_get(scope=scope, key="absent")

    assert hit.statements == miss.statements == [" ".join(store.GET_SQL.split())]


def test_a_set_of_a_new_key_is_one_call(scope):
    with Sent() as sent:
        state_set(scope=scope, key="new", value=1)

    assert len(sent.statements) == 1
    assert "keeperstate_set_key" in sent.statements[0]


def test_an_overwrite_is_one_call(scope, monkeypatch):
    prepared(monkeypatch)
    state_set(scope=scope, key="cursor", value=1)
    state_get(scope=scope, key="cursor")

    with Sent() as sent:
        state_set(scope=scope, key="cursor", value=2)

    assert sent.statements == [" ".join(store.SET_SQL.split())]


def test_a_compare_and_set_is_one_call(scope, monkeypatch):
    prepared(monkeypatch)
    state_set(scope=scope, key="cursor", value=1)

    with Sent() as sent:
        state_set(scope=scope, key="cursor", value=2, expected_version=1)

    assert sent.statements == [" ".join(store.SET_SQL.split())]


def test_a_create_only_set_is_one_call(scope):
    with Sent() as sent:
        state_set(scope=scope, key="lock", value=1, expected_version=0)

    assert len(sent.statements) == 1
    assert "keeperstate_create_key" in sent.statements[0]


def test_an_increment_of_a_live_integer_is_one_call(scope):
    state_increment(scope=scope, key="count")

    with Sent() as sent:
        state_increment(scope=scope, key="count", by=2)

    assert sent.statements == [" ".join(store.INCREMENT_SQL.split())]


def test_an_increment_that_creates_its_key_is_one_call(scope):
    with Sent() as sent:
        write = state_increment(scope=scope, key="count")

    assert sent.statements == [" ".join(store.INCREMENT_SQL.split())]
    assert (write.created, write.value, write.version) == (True, 1, 1)


@pytest.mark.parametrize("write", [
    pytest.param(lambda scope: state_set(scope=scope, key="k", value="grown beyond its size"), id="growing set"),
    pytest.param(lambda scope: state_set(scope=scope, key="k", value=3, expected_version=7), id="lost cas"),
    pytest.param(lambda scope: state_increment(scope=scope, key="text"), id="increment of text"),
])
def test_the_locked_path_is_one_call_after_the_first(scope, write):
    state_set(scope=scope, key="k", value=1)
    state_set(scope=scope, key="text", value="a")

    with Sent() as sent:
        try:
            write(scope)
        except Exception:  # noqa: BLE001 - a refusal is also an answer; what it sent is the point
            pass

    assert len(sent.statements) == 2
    assert "keeperstate_write_locked" in sent.statements[1]


def test_a_delete_is_one_call(scope):
    state_set(scope=scope, key="cursor", value=1)

    with Sent() as sent:
        state_delete(scope=scope, key="cursor")

    assert sent.statements == [" ".join(store.DELETE_SQL.split())]


# --- no scans, and the same work whatever the organization holds --------------------------------


def crowd(scope: StateScope, keys: int) -> None:
    """``keys`` live keys in the scope's organization, in a workflow of their own (raw SQL, as an
    organization that grew over time; the triggers record each in its history), analysed."""
    other = make_workflow(scope_org(scope))
    with connection.cursor() as cursor:
        cursor.execute(
            "INSERT INTO workflow_state (organization_id, workflow_id, key, value)"
            " SELECT %s, %s, 'key-' || g, '1'::jsonb FROM generate_series(1, %s) g",
            [scope.organization_id, other.id, keys],
        )
        cursor.execute(f"ANALYZE {', '.join(CROWDED)}")


def scope_org(scope: StateScope):
    from keeperstate.accounts.models import Organization

    return Organization.objects.get(pk=scope.organization_id)


def fresh_plans() -> None:
    """Plans made anew, from the statistics the test made: the suite's one connection keeps the
    functions' plans of earlier tests (bench_state's, made on tables it had just emptied), which a
    worker's connection would have replanned after the tables' next ANALYZE."""
    with connection.cursor() as cursor:
        cursor.execute("DISCARD PLANS")


@pytest.mark.parametrize("operation", ["create", "overwrite", "get", "increment", "delete"])
def test_an_operation_scans_neither_keys_nor_history_from_end_to_end(scope, operation):
    crowd(scope, 2_000)
    fresh_plans()
    state_set(scope=scope, key="cursor", value=1)
    state_increment(scope=scope, key="count")
    actions = {
        "create": lambda: state_set(scope=scope, key="new", value=1),
        "overwrite": lambda: state_set(scope=scope, key="cursor", value=2),
        "get": lambda: state_get(scope=scope, key="cursor"),
        "increment": lambda: state_increment(scope=scope, key="count"),
        "delete": lambda: state_delete(scope=scope, key="cursor"),
    }

    made = scans_of(actions[operation])

    sequential = {name: seq for name, (seq, _) in made.items() if seq and name in CROWDED}
    assert sequential == {}, f"{operation} scanned {sequential} sequentially"


def creation_in_an_organization_of(keys: int, other_org_name: str) -> tuple[list[str], dict[str, tuple[int, int]]]:
    from tests.factories import make_org

    workflow = make_workflow(make_org(other_org_name))
    scope = StateScope(organization_id=workflow.organization_id, workflow_id=workflow.id)
    if keys:
        crowd(scope, keys)
    state_set(scope=scope, key="warm", value=1)  # the connection's plans made, as a running worker has them
    sent = Sent()
    made = scans_of(lambda: sent.run(lambda: state_set(scope=scope, key="new", value=1)))
    return sent.statements, made


def test_creating_a_key_costs_the_same_in_an_organization_of_0_or_10000_keys(settings):
    # given two organizations, one empty and one holding 10,000 keys, far from their budget
    settings.KEEPERSTATE_ORG_MAX_KEYS = 100_000
    fresh_plans()
    # when each creates a key
    empty_statements, empty_scans = creation_in_an_organization_of(0, "empty")
    full_statements, full_scans = creation_in_an_organization_of(10_000, "full")

    # then both send the same one call and read each table as often, and neither scans the keys
    # or their history
    assert empty_statements == full_statements
    assert len(full_statements) == 1
    assert lookups(empty_scans) == lookups(full_scans)
    assert all(full_scans.get(name, (0, 0))[0] == 0 for name in CROWDED), full_scans


def lookups(made: dict[str, tuple[int, int]]) -> dict[str, int]:
    """How many times each table was read, whichever way."""
    return {name: seq + idx for name, (seq, idx) in made.items()}
