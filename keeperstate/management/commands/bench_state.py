"""Benchmark the state path against its floors, in one run on one database (DESIGN.md §10).

Each operation is measured three ways, through Django's own connection (the store's path):

* **physical floor**: the same statement on ``bench_floor_…``, a plain table created for the run
  with workflow_state's columns, defaults, checks and indexes (``LIKE … INCLUDING ALL``) and
  no triggers and no foreign keys, holding a copy of workflow_state's rows (same index depth);
* **table floor**: the same statement on workflow_state itself, its triggers firing (version,
  tombstone, history, usage counters), as any raw SQL writer would pay;
* **the store** (and for some operations the action path, ``execute_action``);
* for the writes, **the contract's bound**: the physical floor's statement together with the
  rows DESIGN.md §6 makes every such write add (the history event with old and new value; for a
  delete also the tombstone and the two usage counters), in one statement on plain copies of
  those tables, no triggers. No store that keeps the contract can beat this; its ratio to the
  physical floor is printed beside each target, as the most this machine allows.

Key creation is measured in organizations already holding 0, 1,000 and 10,000 keys (the budget
is raised for the run so the largest is not refused), and with 8 concurrent creators, each on
its own connection, all in one organization and spread over 8. The members of a comparison
(floors, store, action) run interleaved in blocks of 10 operations, so a load spike on a shared
machine reaches them alike, and the whole measurement is repeated in passes, the first
``--warmup`` of them discarded (connections' prepared statements, PL/pgSQL plans, caches).
The targets (DESIGN.md §10) are ratios: a write to its bound, a get to the physical floor's select,
a creation to the physical floor's insert. Every operation is timed on its own; in a pass, a
member's figure is its typical operation (the median time), and the verdict is the median of the
passes' ratios, printed with its quartiles and range (keeperstate/ops/bench_rounds.py, ADR 0060):
the noise of a shared machine is a tail, which the typical operation leaves out and a total takes
in. The ops/s figures, and the ratio ``all``, are all counted operations over all their time; a
target is met when the typical ratio and ``all`` both meet it, so no tail of the store's own can
hide behind the median. The last line is JSON. ``--check`` exits non-zero when a target is missed; ``--ci`` is a shorter
profile that measures only what a target compares (1–3 min on a busy 2-core machine).
"""

from __future__ import annotations

import functools
import json
import statistics
import threading
import time
import uuid
from collections.abc import Callable
from typing import Any

from django.core.management.base import BaseCommand, CommandError
from django.db import connection
from django.test.utils import override_settings

from keeperstate.accounts.models import Organization
from keeperstate.core.cursors import kept_cursor
from keeperstate.core.numbers import MAX_SAFE_INTEGER
from keeperstate.engine.context import RunContext
from keeperstate.engine.runner import execute_action
from keeperstate.ops.bench_rounds import RoundRatio
from keeperstate.ops.schema import require_migrated
from keeperstate.state import store
from keeperstate.state.models import WorkflowState
from keeperstate.state.store import StateScope, state_delete, state_get, state_increment, state_set
from keeperstate.workflows.models import Workflow

KEYS_PER_WORKFLOW = 100
ORG_SIZES = (0, 1_000, 10_000)
CONCURRENT = 8
CURSOR = 10_000_000  # a block-number cursor: every write the same size, like a real one
BLOCK = 10
# (operations per member and pass, passes counted, warm-up passes discarded)
PROFILES = {"default": (200, 12, 1), "ci": (120, 7, 1), "quick": (200, 1, 0)}

INSERT_SQL = """
INSERT INTO workflow_state (organization_id, workflow_id, key, value, version, expires_at, updated_by_execution_id)
VALUES (%(org)s, %(wf)s, %(key)s, %(value)s::jsonb, 1, now() + %(ttl)s * interval '1 second', %(execution)s)
RETURNING version, expires_at
"""
PLAIN_DELETE_SQL = f"""
DELETE FROM workflow_state
 WHERE organization_id = %(org)s AND workflow_id = %(wf)s AND key = %(key)s AND {store.LIVE_SQL}
RETURNING version
"""
# The physical statement of each write, as a raw SQL writer sends it: the row found by its key,
# live, not growing, the version moved as the store's functions move it.
_KEY = "organization_id = %(org)s AND workflow_id = %(wf)s AND key = %(key)s"
_SET_ROW = ("expires_at = now() + %(ttl)s * interval '1 second', updated_by_execution_id = %(execution)s, "
            "version = version + 1, updated_at = now()")
_OVERWRITE = f"""
UPDATE workflow_state SET value = %(value)s::jsonb, {_SET_ROW}
 WHERE {_KEY} AND {store.LIVE_SQL} AND size_bytes >= octet_length((%(value)s::jsonb)::text){{cas}}
RETURNING version, expires_at
"""
INCREMENT_SQL = f"""
UPDATE workflow_state SET value = ((value::text::numeric + %(by)s)::text)::jsonb, {_SET_ROW}
 WHERE {_KEY} AND {store.LIVE_SQL} AND jsonb_typeof(value) = 'number'
   AND size_bytes >= octet_length((value::text::numeric + %(by)s)::text)
RETURNING value, version, expires_at
"""
# The statements each floor sends: the physical overwrite (plain and compare-and-set), increment
# and get; for creation and delete the plain INSERT and DELETE (the store's delete also writes its
# history event).
FLOOR_STATEMENTS = {
    "overwrite": _OVERWRITE.format(cas=""),
    "cas": _OVERWRITE.format(cas=" AND version = %(expected)s"),
    "increment": INCREMENT_SQL,
    "select": store.GET_SQL,
    "insert": INSERT_SQL,
    "delete": PLAIN_DELETE_SQL,
}
# The contract's bound (see the module's docstring): each write with the rows DESIGN.md §6 adds to
# it, in one statement on plain tables ({state}, {event}, … are the run's copies). The old value
# is read under the row lock, as a correct history needs it under concurrent writers (an UPDATE
# cannot return the row it replaced before Postgres 18, and CI's server is 15). The row is found
# again by its whole primary key, (organization_id, workflow_id, key), as the store's statements
# find it: by id alone, Postgres 15 read the whole primary key (organization_id, id) of the time
# (it has no skip scan), which made the bound slower than the store on the server.
_RECORDED_UPDATE = f"""
WITH old AS (
    SELECT value, version FROM {{state}} WHERE organization_id = %(org)s AND workflow_id = %(wf)s
       AND key = %(key)s AND {store.LIVE_SQL} {{condition}} FOR UPDATE
), new AS (
    UPDATE {{state}} s SET value = {{value}}, expires_at = now() + %(ttl)s * interval '1 second',
           updated_by_execution_id = %(execution)s, version = old.version + 1, updated_at = now()
      FROM old WHERE s.organization_id = %(org)s AND s.workflow_id = %(wf)s AND s.key = %(key)s
       AND s.size_bytes >= octet_length(({{value}})::text)
    RETURNING s.organization_id, s.workflow_id, s.key, old.value AS old_value, s.value, old.version AS old_version,
              s.version, s.expires_at, s.updated_by_execution_id
)
INSERT INTO {{event}} (organization_id, workflow_id, key, operation, old_value, new_value, old_version, new_version,
                       execution_id, created_at)
SELECT organization_id, workflow_id, key, 'update', old_value, value, old_version, version, updated_by_execution_id,
       clock_timestamp()
  FROM new
RETURNING new_version
"""
RECORDED_STATEMENTS = {
    "overwrite": _RECORDED_UPDATE.replace("{condition}", "").replace("{value}", "%(value)s::jsonb"),
    "cas": _RECORDED_UPDATE.replace("{condition}", "AND version = %(expected)s").replace("{value}", "%(value)s::jsonb"),
    "increment": _RECORDED_UPDATE.replace(
        "{condition}", "AND jsonb_typeof(value) = 'number' AND value::text ~ '^-?[0-9]+$' "
        f"AND abs(value::text::numeric + %(by)s) <= {MAX_SAFE_INTEGER}",
    ).replace("{value}", "((old.value::text::numeric + %(by)s)::text)::jsonb"),
    "delete": f"""
WITH gone AS (
    DELETE FROM {{state}} WHERE organization_id = %(org)s AND workflow_id = %(wf)s AND key = %(key)s
       AND {store.LIVE_SQL}
    RETURNING organization_id, workflow_id, key, value, version, size_bytes
), event AS (
    INSERT INTO {{event}} (organization_id, workflow_id, key, operation, old_value, old_version, execution_id,
                           created_at)
    SELECT organization_id, workflow_id, key, 'delete', value, version, %(execution)s, clock_timestamp() FROM gone
), tombstone AS (
    INSERT INTO {{tombstone}} AS t (organization_id, workflow_id, key, last_version)
    SELECT organization_id, workflow_id, key, version FROM gone
    ON CONFLICT (organization_id, workflow_id, key)
    DO UPDATE SET last_version = GREATEST(t.last_version, EXCLUDED.last_version)
), org AS (
    UPDATE {{org_usage}} u SET keys = u.keys - 1, bytes = u.bytes - gone.size_bytes
      FROM gone WHERE u.organization_id = gone.organization_id AND u.shard = 0
), wf AS (
    UPDATE {{wf_usage}} u SET keys = u.keys - 1 FROM gone
     WHERE u.organization_id = gone.organization_id AND u.workflow_id = gone.workflow_id
)
SELECT version FROM gone
""",
}
# The tables the bound writes, copied for the run as "<floor>_<suffix>".
RECORDED_TABLES = {
    "event": "workflow_state_event",
    "tombstone": "workflow_state_tombstone",
    "org_usage": "organization_state_usage",
    "wf_usage": "workflow_state_usage",
}
# store measurement: (the statement it is compared with, what it is held against, target ratio).
# DESIGN.md §10: a write against its bound (the same rows by plain SQL on plain tables), a read
# against the plain select of the physical floor; creation against the plain insert.
TARGETS = {
    "store.set.overwrite": ("overwrite", "bound", 0.85),
    "store.set.cas": ("cas", "bound", 0.85),
    "store.increment": ("increment", "bound", 0.85),
    "store.delete": ("delete", "bound", 0.85),
    "store.get": ("select", "physical", 0.95),
    **{f"store.create.org_{size}": ("insert", "physical", 0.5) for size in ORG_SIZES},
}
Op = Callable[[int], Any]
Prepare = Callable[[], Op]


class Command(BaseCommand):
    help = "Measure the state store against the physical floor (a plain table) and the table's own floor."

    def add_arguments(self, parser: Any) -> None:
        parser.add_argument("--iterations", type=int, default=None, help="operations per member and pass")
        parser.add_argument("--repeat", type=int, default=None, help="passes counted")
        parser.add_argument("--warmup", type=int, default=None, help="passes run first and discarded")
        profile = parser.add_mutually_exclusive_group()
        profile.add_argument(
            "--ci", action="store_true",
            help="the profile CI runs: {} operations, {} passes after {} warm-up, only what a target compares".format(
                *PROFILES["ci"]),
        )
        profile.add_argument(
            "--quick", action="store_true", help="one pass of 200 operations (or --iterations): checks it runs"
        )
        parser.add_argument(
            "--check", action="store_true", help="exit non-zero when a target of DESIGN.md §10 is missed"
        )

    def handle(self, *args: Any, **options: Any) -> None:
        require_migrated()
        profile = PROFILES["quick" if options["quick"] else "ci" if options["ci"] else "default"]
        given = (options["iterations"], options["repeat"], options["warmup"])
        iterations, repeat, warmup = (value if value is not None else default
                                      for value, default in zip(given, profile, strict=True))
        if iterations < 1 or repeat < 1 or warmup < 0:
            raise CommandError("--iterations and --repeat must be at least 1, --warmup at least 0.")
        # DEBUG would make Django keep every query; the budget is raised so the organization of
        # 10,000 keys still accepts the measured creations.
        budget = max(ORG_SIZES) + 4 * iterations * CONCURRENT
        started = time.perf_counter()
        with override_settings(DEBUG=False, KEEPERSTATE_ORG_MAX_KEYS=budget):
            bench = Bench(iterations, repeat, warmup, lean=options["ci"])
            try:
                figures, passes = bench.run()
            finally:
                bench.close()
        header = (f"bench_state: {iterations} operations per member and pass, {repeat} pass(es) counted after "
                  f"{warmup} warm-up pass(es); a ratio is the median of the passes' ratios of typical (median) "
                  "operations, spread: quartiles (range); 'all' is all operations over all their time")
        targets = self.report(header, figures, passes, time.perf_counter() - started)
        missed = sorted(name for name, target in targets.items() if not target["met"])
        if options["check"] and missed:
            raise CommandError(f"bench_state missed {len(missed)} target(s) of DESIGN.md §10: {', '.join(missed)}.")

    def report(
        self, header: str, figures: dict[str, float], passes: list[dict[str, float]], seconds: float
    ) -> dict[str, dict[str, Any]]:
        out = self.stdout.write
        out(header)
        out(f"{'operation':<26}{'ops/s':>9}{'physical':>10}{'ratio':>7}{'table':>9}{'ratio':>7}{'bound':>9}"
            f"{'ratio':>7}{'target':>17}         {'spread':<24}{'all':>5}")
        targets: dict[str, dict[str, Any]] = {}
        for name, (statement, against, target) in TARGETS.items():
            size = name.rsplit("_", 1)[-1] if name.startswith("store.create") else None
            reference = f"{against}.{statement}"
            verdict = RoundRatio.of(passes, name, reference)
            everything = figures[name] / figures[reference]
            # Met when the typical operation meets it and all operations do too: the median
            # leaves out others' noise, and with it a tail the store alone might have (ADR 0060).
            met = verdict.median >= target and everything >= target
            to_physical = RoundRatio.of(passes, name, f"physical.{statement}").median
            targets[name] = {**verdict.summary(), "against": against, "target": target, "met": met,
                             "physical": round(to_physical, 3), "all": round(everything, 3)}
            table = to_table = bound = to_bound = ""
            if f"table.{statement}" in figures:  # not measured by --ci: no target compares it
                table = f"{figures[f'table.{statement}']:.0f}"
                to_table = f"{RoundRatio.of(passes, name, f'table.{statement}').median:.2f}"
            if f"bound.{statement}" in figures:  # the most the contract's own rows allow (module docstring)
                targets[name]["bound_to_physical"] = round(
                    RoundRatio.of(passes, f"bound.{statement}", f"physical.{statement}").median, 3)
                bound, to_bound = f"{figures[f'bound.{statement}']:.0f}", f"{verdict.median:.2f}"
            label = f"create, org of {size} keys" if size is not None else name.removeprefix("store.")
            out(f"{label:<26}{figures[name]:>9.0f}{figures[f'physical.{statement}']:>10.0f}{to_physical:>7.2f}"
                f"{table:>9}{to_table:>7}{bound:>9}{to_bound:>7}{'≥ ' + str(target) + ' ' + against:>17}  "
                f"{'ok' if met else 'MISSED':<7}{verdict.spread():<24}{targets[name]['all']:>5.2f}")
        for name in ("action.set.overwrite", "action.get", "action.increment"):
            if name in figures:
                out(f"{name:<26}{figures[name]:>9.0f}")
        largest, smallest = f"store.create.org_{ORG_SIZES[-1]}", f"store.create.org_{ORG_SIZES[0]}"
        flat, flat_all = RoundRatio.of(passes, largest, smallest), figures[largest] / figures[smallest]
        targets["create.flat"] = {**flat.summary(), "target": "0.85–1.15", "all": round(flat_all, 3),
                                  "met": 0.85 <= flat.median <= 1.15 and 0.85 <= flat_all <= 1.15}
        out(f"creation at {ORG_SIZES[-1]:,} keys ÷ at {ORG_SIZES[0]} keys: {flat.median:.2f} (target 0.85–1.15) "
            f"{'ok' if targets['create.flat']['met'] else 'MISSED'}  {flat.spread()}  all {flat_all:.2f}")
        # 8 threads at once: their figure in a pass is keys per second, all threads together.
        together = RoundRatio.of(passes, "concurrent.one_org", "concurrent.eight_orgs")
        together_all = figures["concurrent.one_org"] / figures["concurrent.eight_orgs"]
        targets["create.concurrent"] = {**together.summary(), "target": 0.7, "all": round(together_all, 3),
                                        "met": together.median >= 0.7 and together_all >= 0.7}
        out(f"{CONCURRENT} concurrent creators: one organization {figures['concurrent.one_org']:.0f}/s, "
            f"{CONCURRENT} organizations {figures['concurrent.eight_orgs']:.0f}/s, ratio {together.median:.2f} "
            f"(target ≥ 0.7) {'ok' if targets['create.concurrent']['met'] else 'MISSED'}  {together.spread()}")
        out("bound: the physical floor with the rows every such write must add (its history event; a delete's "
            "tombstone and usage counters too), one statement, plain tables: the most a store keeping DESIGN.md §6 "
            "can reach here")
        missed = [name for name, target in targets.items() if not target["met"]]
        out(f"{len(targets) - len(missed)} of {len(targets)} targets met in {seconds:.0f} s"
            + (f"; missed: {', '.join(missed)}" if missed else ""))
        out(json.dumps({"figures": {k: round(v, 1) for k, v in figures.items()}, "targets": targets,
                        "passes": [{k: round(v, 1) for k, v in p.items()} for p in passes],
                        "seconds": round(seconds, 1)}, sort_keys=True))
        return targets


class Bench:
    def __init__(self, iterations: int, repeat: int, warmup: int, *, lean: bool = False):
        self.n = iterations
        self.repeat = repeat
        self.warmup = warmup
        self.lean = lean
        self.floor = f"bench_floor_{uuid.uuid4().hex[:12]}"
        self.orgs: list[Organization] = []
        self.temporary: list[uuid.UUID] = []  # workflows a measurement filled, removed after it
        self.recorded_tables = {name: f"{self.floor}_{name}" for name in RECORDED_TABLES}
        with connection.cursor() as cursor:
            cursor.execute(f"CREATE TABLE {self.floor} (LIKE workflow_state INCLUDING ALL)")
            for name, table in RECORDED_TABLES.items():
                cursor.execute(f"CREATE TABLE {self.recorded_tables[name]} (LIKE {table} INCLUDING ALL)")

    def close(self) -> None:
        with connection.cursor() as cursor:
            cursor.execute(f"DROP TABLE IF EXISTS {self.floor}, {', '.join(self.recorded_tables.values())}")
        Organization.objects.filter(pk__in=[o.pk for o in self.orgs]).delete()

    # --- set-up (untimed) ------------------------------------------------------------------------

    def org(self, keys: int = 0) -> Organization:
        org = Organization.objects.create(name="bench", slug=f"bench-{uuid.uuid4().hex[:12]}")
        self.orgs.append(org)
        with connection.cursor() as cursor:  # the usage row the contract's bound decrements
            cursor.execute(f"INSERT INTO {self.recorded_tables['org_usage']} (organization_id, shard, keys, bytes) "
                           "VALUES (%s, 0, 0, 0)", [org.id])
        if keys:
            workflows = [self.workflow(org).id for _ in range(-(-keys // KEYS_PER_WORKFLOW))]
            with connection.cursor() as cursor:
                cursor.execute(
                    "INSERT INTO workflow_state (organization_id, workflow_id, key, value) "
                    "SELECT %s, (%s::uuid[])[1 + (n - 1) / %s], 'fill' || n, to_jsonb(n) FROM generate_series(1, %s) n",
                    [org.id, workflows, KEYS_PER_WORKFLOW, keys],
                )
        return org

    def fill_floor(self) -> None:
        """Give the physical floor the rows workflow_state holds: with as many rows its indexes are
        as deep, so the two differ only in what the floor is meant to leave out (the triggers)."""
        columns = ", ".join(  # the floor numbers its rows itself
            field.column for field in WorkflowState._meta.concrete_fields if not (field.generated or field.primary_key)
        )
        with connection.cursor() as cursor:
            cursor.execute(f"INSERT INTO {self.floor} ({columns}) SELECT {columns} FROM workflow_state")
            cursor.execute(f"ANALYZE {self.floor}")
            cursor.execute("ANALYZE workflow_state")

    @staticmethod
    def workflow(org: Organization) -> Workflow:
        return Workflow.objects.create(organization=org, name="bench")

    def fresh_workflows(self, org: Organization, count: int) -> list[uuid.UUID]:
        ids = [self.workflow(org).id for _ in range(count)]
        self.temporary.extend(ids)
        with connection.cursor() as cursor:  # the usage rows the contract's bound decrements
            cursor.execute(f"INSERT INTO {self.recorded_tables['wf_usage']} (organization_id, workflow_id, keys) "
                           "SELECT %s, unnest(%s::uuid[]), 0", [org.id, ids])
        return ids

    def clear(self) -> None:
        """Remove what a measurement created, so each organization keeps its size."""
        if not self.temporary:
            return
        with connection.cursor() as cursor:
            cursor.execute(f"DELETE FROM {self.floor} WHERE workflow_id = ANY(%s)", [self.temporary])
            cursor.execute("DELETE FROM workflow WHERE id = ANY(%s)", [self.temporary])
        self.temporary.clear()

    # --- measurements ----------------------------------------------------------------------------

    def run(self) -> tuple[dict[str, float], list[dict[str, float]]]:
        """The ops/s of every member over the counted passes (all its operations over all its
        time), and each counted pass's figures: a member's typical operation (its median time) as
        ops/s, the concurrent creators' ops/s."""
        home_org = self.org()
        home = self.workflow(home_org)
        scope = StateScope(home_org.id, home.id)
        ctx = RunContext(organization_id=home_org.id, workflow_id=home.id)
        sized = {size: self.org(size) for size in ORG_SIZES}
        self.fill_floor()
        base = {"org": home_org.id, "wf": home.id, "ttl": None, "execution": None}
        for table in (self.floor, "workflow_state"):
            for key, value in (("hot", CURSOR), ("cas", CURSOR), ("ctr", CURSOR)):
                self.execute(INSERT_SQL, table, {**base, "key": key, "value": json.dumps(value)})
        state_set(scope=scope, key="store-cas", value=CURSOR)
        versions = {"store": 1, **{t: 1 for t in (self.floor, "workflow_state")}}

        def statement(kind: str, table: str, statements: dict[str, str] = FLOOR_STATEMENTS) -> Op:
            def op(i: int) -> None:
                params = {**base, "key": "hot", "value": str(CURSOR + i), "by": 1}
                if kind == "cas":
                    params.update(key="cas", expected=versions[table])
                    row = self.execute(statements[kind], table, params)
                    versions[table] = row[0] if row else versions[table]
                elif kind == "increment":
                    self.execute(statements[kind], table, {**params, "key": "ctr"})
                else:
                    self.execute(statements[kind], table, params)

            return op

        def store_cas(i: int) -> None:
            write = state_set(scope=scope, key="store-cas", value=CURSOR + i, expected_version=versions["store"])
            versions["store"] = write.version

        groups: dict[str, dict[str, Prepare]] = {
            kind: {
                f"physical.{kind}": self.same(statement(kind, self.floor)),
                f"table.{kind}": self.same(statement(kind, "workflow_state")),
            }
            for kind in ("overwrite", "cas", "increment", "select")
        }
        for kind in ("overwrite", "cas", "increment"):
            groups[kind][f"bound.{kind}"] = self.same(statement(kind, self.floor, self.recorded))
        groups["overwrite"].update({
            "store.set.overwrite": self.same(lambda i: state_set(scope=scope, key="hot", value=CURSOR + i)),
            "action.set.overwrite": self.same(
                lambda i: execute_action("State Set", {"key": "hot", "value": str(CURSOR + i)}, ctx)
            ),
        })
        groups["cas"]["store.set.cas"] = self.same(store_cas)
        groups["increment"].update({
            "store.increment": self.same(lambda i: state_increment(scope=scope, key="ctr")),
            "action.increment": self.same(lambda i: execute_action("State Increment", {"key": "ctr"}, ctx)),
        })
        groups["select"].update({
            "store.get": self.same(lambda i: state_get(scope=scope, key="hot")),
            "action.get": self.same(lambda i: execute_action("State Get", {"key": "hot"}, ctx)),
        })
        groups["delete"] = {
            "physical.delete": self.new_keys(home_org, self.raw("delete", self.floor), existing=True, table=self.floor),
            "bound.delete": self.new_keys(
                home_org, self.raw("delete", self.floor, self.recorded), existing=True, table=self.floor
            ),
            "table.delete": self.new_keys(home_org, self.raw("delete", "workflow_state"), existing=True),
            "store.delete": self.new_keys(home_org, self.store_delete, existing=True),
        }
        groups["insert"] = {
            "physical.insert": self.new_keys(home_org, self.raw("insert", self.floor), table=self.floor),
            "table.insert": self.new_keys(home_org, self.raw("insert", "workflow_state")),
            **{f"store.create.org_{size}": self.new_keys(org, self.store_create) for size, org in sized.items()},
        }
        if self.lean:  # only what a target compares (--ci): the table floor and the actions are not
            groups = {kind: {name: op for name, op in group.items() if not name.startswith(("table.", "action."))}
                      for kind, group in groups.items()}
        spent: dict[str, float] = {}
        done: dict[str, int] = {}
        passes: list[dict[str, float]] = []
        concurrent = [("concurrent.one_org", False), ("concurrent.eight_orgs", True)]
        for number in range(self.warmup + self.repeat):
            took: dict[str, list[float]] = {}
            for group in groups.values():
                took.update(self.interleaved(group))
            # The two concurrent figures cannot interleave (each is 8 threads at once): they
            # alternate which goes first, so a drift of the machine's load reaches both alike.
            whole = {name: self.concurrent(spread=spread)
                     for name, spread in (concurrent if number % 2 == 0 else concurrent[::-1])}
            if number < self.warmup:
                continue
            # A member's figure in the pass: its typical operation (the median), as operations per second.
            passes.append({**{name: 1 / statistics.median(times) for name, times in took.items()},
                           **{name: count / seconds for name, (count, seconds) in whole.items()}})
            for name, (count, seconds) in [*whole.items(), *((name, (len(t), sum(t))) for name, t in took.items())]:
                done[name] = done.get(name, 0) + count
                spent[name] = spent.get(name, 0.0) + seconds
        return {name: done[name] / spent[name] for name in spent}, passes

    @functools.cached_property
    def recorded(self) -> dict[str, str]:
        """RECORDED_STATEMENTS on this run's plain tables ({state} is the physical floor's)."""
        tables = {"state": "workflow_state", **self.recorded_tables}
        return {kind: sql.format(**tables) for kind, sql in RECORDED_STATEMENTS.items()}

    def execute(self, sql: str, table: str, params: dict[str, Any]) -> tuple[Any, ...] | None:
        # Through the store's own kept cursor: floor and store pay the same client, so a ratio
        # is the store's work in the database (a new cursor per statement costs ~30 µs of CPU).
        cursor = kept_cursor()
        cursor.execute(sql.replace("workflow_state", table) if table != "workflow_state" else sql, params)
        return cursor.fetchone()

    def raw(
        self, kind: str, table: str, statements: dict[str, str] = FLOOR_STATEMENTS
    ) -> Callable[[int, uuid.UUID, str], None]:
        def op(org: int, wf: uuid.UUID, key: str) -> None:
            params = {"org": org, "wf": wf, "key": key, "value": str(CURSOR), "ttl": None, "execution": None}
            self.execute(statements[kind], table, params)

        return op

    @staticmethod
    def store_create(org: int, wf: uuid.UUID, key: str) -> None:
        state_set(scope=StateScope(org, wf), key=key, value=CURSOR)

    @staticmethod
    def store_delete(org: int, wf: uuid.UUID, key: str) -> None:
        state_delete(scope=StateScope(org, wf), key=key)

    @staticmethod
    def same(op: Op) -> Prepare:
        return lambda: op

    def new_keys(
        self, org: Organization, write: Callable[[int, uuid.UUID, str], None], *, existing: bool = False,
        table: str = "workflow_state",
    ) -> Prepare:
        """n operations on keys k0..kn of fresh workflows (written first, untimed, when `existing`)."""

        def prepare() -> Op:
            targets = self.fresh_workflows(org, -(-self.n // KEYS_PER_WORKFLOW))
            if existing:
                for i in range(self.n):
                    self.raw("insert", table)(org.id, targets[i // KEYS_PER_WORKFLOW], f"k{i}")
            return lambda i: write(org.id, targets[i // KEYS_PER_WORKFLOW], f"k{i}")

        return prepare

    def interleaved(self, group: dict[str, Prepare]) -> dict[str, list[float]]:
        """Run the group's operations in rotations of one block of BLOCK each, each member first
        in turn, so a load spike of the shared machine reaches every member alike; the seconds of
        each operation, by member."""
        ops = {name: prepare() for name, prepare in group.items()}
        names = list(ops)
        took: dict[str, list[float]] = {name: [] for name in names}
        for number, start in enumerate(range(0, self.n, BLOCK)):
            for name in names[number % len(names):] + names[: number % len(names)]:
                op, times = ops[name], took[name]
                for i in range(start, min(start + BLOCK, self.n)):
                    began = time.perf_counter()
                    op(i)
                    times.append(time.perf_counter() - began)
        self.clear()
        return took

    def concurrent(self, *, spread: bool) -> tuple[int, float]:
        """Keys created per second by CONCURRENT threads (each its own connection), all in one
        organization or each in its own."""
        orgs = [self.org() for _ in range(CONCURRENT)] if spread else [self.org()] * CONCURRENT
        per_thread = max(self.n // 2, 10)
        targets = [self.fresh_workflows(org, -(-per_thread // KEYS_PER_WORKFLOW)) for org in orgs]
        barrier = threading.Barrier(CONCURRENT + 1)
        errors: list[BaseException] = []

        def work(t: int) -> None:
            try:
                connection.ensure_connection()
                barrier.wait(timeout=60)
                for i in range(per_thread):
                    self.store_create(orgs[t].id, targets[t][i // KEYS_PER_WORKFLOW], f"c{i}")
            except BaseException as exc:  # reported below, after every thread has stopped
                errors.append(exc)
            finally:
                connection.close()

        threads = [threading.Thread(target=work, args=(t,)) for t in range(CONCURRENT)]
        for thread in threads:
            thread.start()
        barrier.wait(timeout=60)
        start = time.perf_counter()
        for thread in threads:
            thread.join(timeout=600)
        elapsed = time.perf_counter() - start
        self.clear()
        if errors or any(thread.is_alive() for thread in threads):
            raise RuntimeError(f"a concurrent creator failed: {errors[:1] or 'did not finish in 600 s'}")
        return CONCURRENT * per_thread, elapsed
