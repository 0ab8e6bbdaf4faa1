"""Benchmark the state path against the raw single-statement SQL floor, in one run.

The floor is the statement itself sent through psycopg on its own connection (client-side
binding, like Django's): an upsert, an insert of a new key, a select, an increment and a delete
on workflow_state, with the table's triggers firing as for any writer. The store and the action path are measured
on the same database in the same run, so each ratio (store ops/s ÷ floor ops/s) compares
like with like on whatever machine runs it.
"""

from __future__ import annotations

import json
import time
import uuid
from collections.abc import Callable
from typing import Any

import psycopg
from django.core.management.base import BaseCommand
from django.db import connection
from django.test.utils import override_settings

from keeperstate.engine.context import RunContext
from keeperstate.engine.runner import run_action
from keeperstate.models import Organization, Workflow
from keeperstate.state.store import StateScope, state_delete, state_get, state_increment, state_set

FLOOR_UPSERT = """
INSERT INTO workflow_state (organization_id, workflow_id, key, value, version)
VALUES (%s, %s, %s, %s::jsonb, 1)
ON CONFLICT (organization_id, workflow_id, key) DO UPDATE SET value = EXCLUDED.value
RETURNING version
"""
FLOOR_SELECT = """
SELECT value, version, expires_at FROM workflow_state
 WHERE organization_id = %s AND workflow_id = %s AND key = %s AND (expires_at IS NULL OR expires_at > now())
"""
FLOOR_INCREMENT = """
UPDATE workflow_state SET value = to_jsonb(value::text::numeric + 1)
 WHERE organization_id = %s AND workflow_id = %s AND key = %s AND (expires_at IS NULL OR expires_at > now())
RETURNING value, version
"""
FLOOR_DELETE = """
DELETE FROM workflow_state
 WHERE organization_id = %s AND workflow_id = %s AND key = %s AND (expires_at IS NULL OR expires_at > now())
RETURNING version
"""
KEYS_PER_WORKFLOW = 100  # new-key runs fill one workflow after another, below the ceiling


class Command(BaseCommand):
    help = "Measure State Get/Set through the store and the action path against the raw SQL floor."

    def add_arguments(self, parser: Any) -> None:
        parser.add_argument("--iterations", type=int, default=2000, help="operations per measurement")
        parser.add_argument("--repeat", type=int, default=3, help="measurements per operation; the best counts")

    def handle(self, *args: Any, **options: Any) -> None:
        # DEBUG would make Django log every query, which is not what production pays.
        with override_settings(DEBUG=False):
            org = Organization.objects.create(name="bench", slug=f"bench-{uuid.uuid4().hex[:12]}")
            try:
                figures = Bench(org, options["iterations"], options["repeat"]).run()
            finally:
                org.delete()
        self.report(figures)

    def report(self, figures: dict[str, dict[str, float]]) -> None:
        self.stdout.write(f"{'operation':<28}{'ops/s':>10}{'floor ops/s':>13}{'ratio':>8}")
        for name, row in figures.items():
            self.stdout.write(f"{name:<28}{row['ops']:>10.0f}{row['floor']:>13.0f}{row['ratio']:>8.2f}")
        self.stdout.write(json.dumps(figures, sort_keys=True))


class Bench:
    def __init__(self, org: Organization, iterations: int, repeat: int):
        self.org = org
        self.n = iterations
        self.repeat = repeat
        self.pool = [Workflow.objects.create(organization=org, name=f"bench {i}") for i in range(self._pool_size())]
        # Django's own connection parameters (same server, same adapters, no prepared statements),
        # with psycopg's plain client-side cursor instead of Django's wrapper.
        params = {**connection.get_connection_params(), "cursor_factory": psycopg.ClientCursor}
        self.raw = psycopg.connect(**params, autocommit=True)

    def _pool_size(self) -> int:
        # Each new-key and delete measurement (floor, store, action) runs `repeat` times over
        # fresh workflows.
        return 6 * self.repeat * (-(-self.n // KEYS_PER_WORKFLOW)) + 1

    def run(self) -> dict[str, dict[str, float]]:
        try:
            return self._run()
        finally:
            self.raw.close()

    def _run(self) -> dict[str, dict[str, float]]:
        home = self.pool[0]
        scope = StateScope(organization_id=self.org.id, workflow_id=home.id)
        ctx = RunContext(organization_id=self.org.id, workflow_id=home.id)
        fresh = iter(self.pool[1:])
        cur = self.raw.cursor()
        cur.execute(FLOOR_UPSERT, [self.org.id, home.id, "hot", "1"])
        state_set(scope=scope, key="cas", value=0)

        def floor_upsert(i: int) -> None:
            cur.execute(FLOOR_UPSERT, [self.org.id, home.id, "hot", str(i)])

        def floor_select(i: int) -> None:
            cur.execute(FLOOR_SELECT, [self.org.id, home.id, "hot"])
            cur.fetchone()

        def new_keys(
            write: Callable[[uuid.UUID, str, int], Any], *, existing: bool = False
        ) -> Callable[[], Callable[[int], None]]:
            """Operations on keys k0..kn spread over fresh workflows (created first when `existing`)."""

            def prepare() -> Callable[[int], None]:
                targets = [next(fresh).id for _ in range(-(-self.n // KEYS_PER_WORKFLOW))]
                if existing:
                    for i in range(self.n):
                        raw_insert(targets[i // KEYS_PER_WORKFLOW], f"k{i}", i)
                return lambda i: write(targets[i // KEYS_PER_WORKFLOW], f"k{i}", i)

            return prepare

        def raw_insert(wf: uuid.UUID, key: str, i: int) -> None:
            cur.execute(FLOOR_UPSERT, [self.org.id, wf, key, str(i)])

        def store_insert(wf: uuid.UUID, key: str, i: int) -> None:
            state_set(scope=StateScope(self.org.id, wf), key=key, value=i)

        def action_insert(wf: uuid.UUID, key: str, i: int) -> None:
            run_action("State Set", {"key": key, "value": str(i)}, RunContext(self.org.id, wf))

        def raw_delete(wf: uuid.UUID, key: str, i: int) -> None:
            cur.execute(FLOOR_DELETE, [self.org.id, wf, key])

        def store_delete(wf: uuid.UUID, key: str, i: int) -> None:
            state_delete(scope=StateScope(self.org.id, wf), key=key)

        def action_delete(wf: uuid.UUID, key: str, i: int) -> None:
            run_action("State Delete", {"key": key}, RunContext(self.org.id, wf))

        def floor_increment(i: int) -> None:
            cur.execute(FLOOR_INCREMENT, [self.org.id, home.id, "ctr"])

        cur.execute(FLOOR_UPSERT, [self.org.id, home.id, "ctr", "0"])
        version = {"cas": 1}

        def store_cas(i: int) -> None:
            version["cas"] = state_set(scope=scope, key="cas", value=i, expected_version=version["cas"]).version

        floor = {
            "upsert": self.best(floor_upsert),
            "insert": self.best_prepared(new_keys(raw_insert)),
            "select": self.best(floor_select),
            "increment": self.best(floor_increment),
            "delete": self.best_prepared(new_keys(raw_delete, existing=True)),
        }
        measured = {
            "store.set.overwrite": (self.best(lambda i: state_set(scope=scope, key="hot", value=i)), "upsert"),
            "store.set.cas": (self.best(store_cas), "upsert"),
            "store.set.new_key": (self.best_prepared(new_keys(store_insert)), "insert"),
            "store.get": (self.best(lambda i: state_get(scope=scope, key="hot")), "select"),
            "action.set.overwrite": (
                self.best(lambda i: run_action("State Set", {"key": "hot", "value": str(i)}, ctx)),
                "upsert",
            ),
            "action.set.new_key": (self.best_prepared(new_keys(action_insert)), "insert"),
            "action.get": (self.best(lambda i: run_action("State Get", {"key": "hot"}, ctx)), "select"),
            "store.increment": (self.best(lambda i: state_increment(scope=scope, key="ctr")), "increment"),
            "action.increment": (self.best(lambda i: run_action("State Increment", {"key": "ctr"}, ctx)), "increment"),
            "store.delete": (self.best_prepared(new_keys(store_delete, existing=True)), "delete"),
            "action.delete": (self.best_prepared(new_keys(action_delete, existing=True)), "delete"),
        }
        figures = {f"floor.{name}": {"ops": ops, "floor": ops, "ratio": 1.0} for name, ops in floor.items()}
        for name, (ops, against) in measured.items():
            figures[name] = {"ops": ops, "floor": floor[against], "ratio": round(ops / floor[against], 3)}
        return figures

    def best(self, op: Callable[[int], Any]) -> float:
        return self.best_prepared(lambda: op)

    def best_prepared(self, prepare: Callable[[], Callable[[int], Any]]) -> float:
        """Best ops/s over `repeat` timed runs of n operations (preparation is not timed)."""
        rates = []
        for _ in range(self.repeat):
            op = prepare()
            start = time.perf_counter()
            for i in range(self.n):
                op(i)
            rates.append(self.n / (time.perf_counter() - start))
        return max(rates)
