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
KEYS_PER_WORKFLOW = 100
Prepare = Callable[[], Callable[[int], Any]]  # new-key runs fill one workflow after another, below the ceiling


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
        self.used: list[uuid.UUID] = []  # workflows whose keys the current measurement wrote
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
                self.used.extend(targets)
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

        same = self.same  # an operation on the same key each time
        # name: (prepare, floor it is compared with); "floor.*" are the floors themselves.
        plan: dict[str, tuple[Prepare, str]] = {
            "floor.upsert": (same(floor_upsert), "floor.upsert"),
            "floor.insert": (new_keys(raw_insert), "floor.insert"),
            "floor.select": (same(floor_select), "floor.select"),
            "floor.increment": (same(floor_increment), "floor.increment"),
            "floor.delete": (new_keys(raw_delete, existing=True), "floor.delete"),
            "store.set.overwrite": (same(lambda i: state_set(scope=scope, key="hot", value=i)), "floor.upsert"),
            "store.set.cas": (same(store_cas), "floor.upsert"),
            "store.set.new_key": (new_keys(store_insert), "floor.insert"),
            "store.get": (same(lambda i: state_get(scope=scope, key="hot")), "floor.select"),
            "store.increment": (same(lambda i: state_increment(scope=scope, key="ctr")), "floor.increment"),
            "store.delete": (new_keys(store_delete, existing=True), "floor.delete"),
            "action.set.overwrite": (
                same(lambda i: run_action("State Set", {"key": "hot", "value": str(i)}, ctx)),
                "floor.upsert",
            ),
            "action.set.new_key": (new_keys(action_insert), "floor.insert"),
            "action.get": (same(lambda i: run_action("State Get", {"key": "hot"}, ctx)), "floor.select"),
            "action.increment": (
                same(lambda i: run_action("State Increment", {"key": "ctr"}, ctx)),
                "floor.increment",
            ),
            "action.delete": (new_keys(action_delete, existing=True), "floor.delete"),
        }
        # Rounds interleave every operation, so drift in the machine (other load, checkpoints,
        # autovacuum) reaches floors and measurements alike; each keeps its best round.
        best: dict[str, float] = {}
        for _round in range(self.repeat):
            for name, (prepare, _floor) in plan.items():
                best[name] = max(best.get(name, 0.0), self.timed(prepare))
        return {
            name: {"ops": best[name], "floor": best[floor], "ratio": round(best[name] / best[floor], 3)}
            for name, (_prepare, floor) in plan.items()
        }

    @staticmethod
    def same(op: Callable[[int], Any]) -> Prepare:
        return lambda: op

    def timed(self, prepare: Prepare) -> float:
        """ops/s of n operations (preparation and clean-up are not timed)."""
        op = prepare()
        start = time.perf_counter()
        for i in range(self.n):
            op(i)
        rate = self.n / (time.perf_counter() - start)
        self._clear_used()
        return rate

    def _clear_used(self) -> None:
        """Remove what a new-key run wrote (untimed), so the organization stays the same size and
        within its budget from one measurement to the next."""
        if self.used:
            with self.raw.cursor() as cursor:
                cursor.execute("DELETE FROM workflow_state WHERE workflow_id = ANY(%s)", [self.used])
            self.used.clear()
