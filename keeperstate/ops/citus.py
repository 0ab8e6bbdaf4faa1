"""The Citus layout (docs/scaling.md): which tables are reference tables, which are distributed by
``organization_id`` and co-located, which functions run on their organization's shard, and the
statements that lay a migrated database out so, in the order Citus accepts.

One source of truth: ``manage.py citus_layout`` runs and prints these statements, the test hook
for a distributed database (tests/citus.py) lays its template out with them, and the check of the
statements the suite sends (tests/sharding/) reads ``DISTRIBUTED_TABLES`` as the sharded ones.

Why the foreign keys come off and on again. ``create_reference_table('auth_user')`` makes every
local table with a key onto ``auth_user`` (Django's auth and admin tables, the API tokens, the
secrets) a *Citus local table*: Citus keeps them on the coordinator, in its metadata, so their
keys onto a reference table hold. It would do the same to ``workflow`` and every table keyed by
it, and a Citus local table cannot then be distributed ("foreign keys from reference tables and
local tables to distributed tables are not supported"). So the distributed tables' own keys are
dropped first, the tables distributed, and the keys added again, now between co-located shards
and onto reference tables, which Citus supports. Nothing outside the family has a key into it.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

# Copied to every node: read by the statements on the shards (an organization's existence in the
# state triggers, a user's memberships in the workflow lists, the history retention in the trim)
# and the targets of the distributed tables' foreign keys. Written rarely.
REFERENCE_TABLES = ("organization", "auth_user", "membership", "keeperstate_setting")

# Sharded by organization_id, one co-location group anchored on the first.
DISTRIBUTED_TABLES = (
    "workflow",
    "workflow_state",
    "workflow_state_event",
    "workflow_state_tombstone",
    "workflow_state_usage",
    "workflow_state_history_due",
    "organization_state_usage",
    "workflow_execution",
    "workflow_version",
)
DISTRIBUTION_COLUMN = "organization_id"

# The store's functions, each run whole on the shard of its p_org (force_delegation: inside a
# caller's transaction too, so a function's statements never cross the network one by one and
# take their clock from the key's node; docs/state.md).
DISTRIBUTED_FUNCTIONS = (
    "keeperstate_set_key(bigint, uuid, text, jsonb, integer, uuid, bigint, boolean, integer, bigint, bigint)",
    "keeperstate_create_key(bigint, uuid, text, jsonb, integer, uuid, boolean, integer, bigint, bigint)",
    "keeperstate_increment_key(bigint, uuid, text, bigint, integer, uuid, boolean, integer, bigint, bigint)",
    "keeperstate_write_locked(bigint, uuid, text, jsonb, bigint, integer, uuid, bigint, boolean, integer, bigint, "
    "bigint)",
    "keeperstate_delete_key(bigint, uuid, text, bigint, uuid)",
    "keeperstate_check_usage(bigint, uuid, boolean, boolean, boolean, integer, bigint, bigint)",
    "keeperstate_lock_usage(bigint)",
    "keeperstate_reclaim_expired(bigint, uuid, integer)",
    "keeperstate_trim_history(bigint, integer)",
)


# Every identity sequence of a table Citus took (reference, Citus local, distributed) goes on after
# the table's rows: Citus creates the tables' sequences anew, at 1, and the next insert into a table
# that held rows (the content types, the permissions of the migrations' own post_migrate, or every
# table of a restored database) would take an id already taken.
SEQUENCES_SQL = """DO $$
DECLARE t record;
BEGIN
    FOR t IN SELECT p.logicalrelid::regclass::text AS tab, a.attname AS col,
                    pg_get_serial_sequence(p.logicalrelid::regclass::text, a.attname) AS seq
               FROM pg_dist_partition p JOIN pg_attribute a ON a.attrelid = p.logicalrelid AND a.attnum > 0
              WHERE a.attidentity <> '' AND NOT a.attisdropped
    LOOP
        EXECUTE format('SELECT setval(%L, coalesce(max(%I), 0) + 1, false) FROM %s', t.seq, t.col, t.tab);
    END LOOP;
END $$;"""


@dataclass(frozen=True)
class Step:
    """One statement of the layout and what it does."""

    sql: str
    why: str


class NotACoordinator(RuntimeError):
    """The database cannot be laid out (no Citus, no workers, a setting off): the message says why."""


def plan(cursor: Any, *, fresh: bool = False) -> list[Step]:
    """The statements still to run on this database, in order; empty when it is laid out.

    Reads the catalog: the distributed tables' foreign keys as they are defined, and what Citus
    has already distributed, so the layout can be run again after it stopped halfway. ``fresh``:
    the whole layout, as for a database nothing of which is distributed yet (docs/scaling.md
    prints it; tests/commands/test_citus_layout.py holds the two equal).
    """
    kinds = {} if fresh else _citus_kinds(cursor)
    todo_distributed = [t for t in DISTRIBUTED_TABLES if kinds.get(t) != "distributed"]
    keys = _foreign_keys(cursor, todo_distributed)
    steps = [Step(f"ALTER TABLE {table} DROP CONSTRAINT {name};", "off while the family is distributed")
             for table, name, _ in keys]
    steps += [Step(f"SELECT create_reference_table('{table}');", "reference table")
              for table in REFERENCE_TABLES if kinds.get(table) != "reference"]
    for table in todo_distributed:
        colocate = "" if table == DISTRIBUTED_TABLES[0] else f", colocate_with => '{DISTRIBUTED_TABLES[0]}'"
        steps.append(Step(f"SELECT create_distributed_table('{table}', '{DISTRIBUTION_COLUMN}'{colocate});",
                          "distributed by organization"))
    steps += [Step(f"ALTER TABLE {table} ADD CONSTRAINT {name} {definition};", "the key again, between shards")
              for table, name, definition in keys]
    distributed = set() if fresh else _distributed_functions(cursor)
    steps += [
        Step(f"SELECT create_distributed_function('{signature}', 'p_org', colocate_with => "
             f"'{DISTRIBUTED_TABLES[1]}', force_delegation => true);", "runs on its organization's shard")
        for signature in DISTRIBUTED_FUNCTIONS if _normalized(signature) not in distributed
    ]
    if steps:
        steps.append(Step(SEQUENCES_SQL, "identities go on after the rows"))
    return steps


def require_coordinator(cursor: Any) -> None:
    """Refuse, in one sentence each, a database that is not a Citus coordinator ready for the layout."""
    cursor.execute("SELECT extversion FROM pg_extension WHERE extname = 'citus'")
    if cursor.fetchone() is None:
        raise NotACoordinator(
            "This database has no citus extension: run CREATE EXTENSION citus on the coordinator and every "
            "worker (docs/scaling.md) before the layout."
        )
    cursor.execute("SELECT count(*) FILTER (WHERE groupid = 0), count(*) FILTER (WHERE groupid > 0) FROM pg_dist_node")
    coordinator, workers = cursor.fetchone()
    if not coordinator:
        raise NotACoordinator(
            "The coordinator is not in Citus's metadata: run SELECT citus_set_coordinator_host('<its host>', <port>) "
            "first (the tables keyed onto auth_user stay on the coordinator as Citus local tables)."
        )
    if not workers:
        raise NotACoordinator("No worker is added: run SELECT citus_add_node('<host>', <port>) for each worker first.")
    cursor.execute("SHOW citus.enable_unsafe_triggers")
    if cursor.fetchone()[0] != "on":
        raise NotACoordinator(
            "citus.enable_unsafe_triggers is off: the state tables keep their triggers on the shards; set it on "
            "every node (ALTER SYSTEM SET citus.enable_unsafe_triggers = on; SELECT pg_reload_conf();)."
        )


def run(cursor: Any, steps: list[Step]) -> None:
    """Run the steps in one transaction: a layout that fails leaves the database as it was."""
    cursor.execute("BEGIN")
    try:
        for step in steps:
            cursor.execute(step.sql)
    except BaseException:
        cursor.execute("ROLLBACK")
        raise
    cursor.execute("COMMIT")


def _citus_kinds(cursor: Any) -> dict[str, str]:
    cursor.execute(
        "SELECT logicalrelid::regclass::text, CASE WHEN partmethod = 'h' THEN 'distributed' "
        "WHEN repmodel = 't' THEN 'reference' ELSE 'local' END FROM pg_dist_partition"
    )
    return {name.strip('"'): kind for name, kind in cursor.fetchall()}


def _foreign_keys(cursor: Any, tables: list[str]) -> list[tuple[str, str, str]]:
    if not tables:
        return []
    cursor.execute(
        "SELECT conrelid::regclass::text, conname, pg_get_constraintdef(oid) FROM pg_constraint "
        "WHERE contype = 'f' AND conrelid = ANY(%s::regclass[]) ORDER BY array_position(%s::regclass[], conrelid), "
        "conname",
        [tables, tables],
    )
    return [(table.strip('"'), name, definition) for table, name, definition in cursor.fetchall()]


def _distributed_functions(cursor: Any) -> set[str]:
    cursor.execute(
        "SELECT objid::regprocedure::text FROM pg_dist_object "
        "WHERE classid = 'pg_proc'::regclass AND distribution_argument_index IS NOT NULL"
    )
    return {_normalized(row[0]) for row in cursor.fetchall()}


def _normalized(signature: str) -> str:
    return signature.replace(" ", "")
