"""The schema stays shardable by organization (docs/scaling.md, ADR 0045): read from the catalog of
the migrated database, so a new table, key, trigger or function that a distributed Postgres
(Citus) would refuse fails here, on plain Postgres.

* every state table (``workflow_state*``, ``organization_state*``), ``workflow`` and
  ``workflow_execution`` carries ``organization_id NOT NULL``, first in its primary key and in
  every unique key and unique index;
* foreign keys between them are composite with the organization and never ON UPDATE CASCADE;
  none points from a reference table (organizations, users, settings) into them;
* a state table has one whole index led by ``organization_id`` or ``workflow_id``, its key;
* no trigger has a transition table (``REFERENCING NEW/OLD TABLE``);
* every function of the store (``keeperstate_*``, trigger functions aside) takes ``p_org``;
* the statements the store sends avoid what a distributed planner refuses.
"""

from __future__ import annotations

import re

import pytest
from django.db import connection

from keeperstate.state import maintenance, sql, store

pytestmark = pytest.mark.django_db

SHARDED_TABLES_SQL = r"""
SELECT c.relname FROM pg_class c
 WHERE c.relnamespace = 'public'::regnamespace AND c.relkind IN ('r', 'p')
   AND (c.relname LIKE 'workflow%%' OR c.relname LIKE 'organization\_state%%')
 ORDER BY 1
"""
EXPECTED = {
    "organization_state_usage", "workflow", "workflow_execution", "workflow_state", "workflow_state_event",
    "workflow_state_history_due", "workflow_state_tombstone", "workflow_state_usage", "workflow_version",
}


def query(text: str, params: list | None = None) -> list[tuple]:
    with connection.cursor() as cursor:
        cursor.execute(text, params or [])
        return cursor.fetchall()


def sharded() -> list[str]:
    return [name for (name,) in query(SHARDED_TABLES_SQL)]


def test_the_check_sees_every_table_of_the_state_and_the_executions():
    assert set(sharded()) >= EXPECTED


@pytest.mark.parametrize("table", sorted(EXPECTED))
def test_each_sharded_table_has_organization_id_not_null(table):
    assert query(
        "SELECT attnotnull FROM pg_attribute WHERE attrelid = %s::regclass AND attname = 'organization_id'", [table]
    ) == [(True,)], f"{table} needs organization_id NOT NULL"


def test_every_primary_and_unique_key_of_a_sharded_table_leads_with_organization_id():
    wrong = query(
        """
        SELECT i.indrelid::regclass::text, i.indexrelid::regclass::text, pg_get_indexdef(i.indexrelid)
          FROM pg_index i
         WHERE i.indrelid::regclass::text = ANY(%s) AND (i.indisunique OR i.indisprimary)
           AND (i.indkey[0] = 0 OR (SELECT a.attname FROM pg_attribute a
                                     WHERE a.attrelid = i.indrelid AND a.attnum = i.indkey[0]) <> 'organization_id')
        """,
        [sharded()],
    )
    assert wrong == [], "a key of a sharded table must start with organization_id (docs/scaling.md)"
    for table in sharded():
        assert query(
            "SELECT 1 FROM pg_constraint WHERE conrelid = %s::regclass AND contype = 'p'", [table]
        ), f"{table} has no primary key"


def test_each_state_table_has_one_index_a_lookup_by_key_could_take():
    # Every reader names the organization, the workflow and mostly the key. Two whole indexes led
    # by the organization or the workflow tie for an organization or workflow the statistics do
    # not know yet (each seems to find its one row), the smaller wins, and the lookup filters all
    # their rows (migrations 0020–0022). organization_state_usage has two per organization's 64
    # shard rows, which bounds that.
    led = query(
        r"""
        SELECT i.indrelid::regclass::text, array_agg(i.indexrelid::regclass::text ORDER BY 1) FROM pg_index i
         WHERE i.indrelid::regclass::text ~ '^workflow_state' AND i.indpred IS NULL
           AND (SELECT a.attname FROM pg_attribute a
                 WHERE a.attrelid = i.indrelid AND a.attnum = i.indkey[0]) IN ('organization_id', 'workflow_id')
         GROUP BY 1 HAVING count(*) > 1
        """
    )
    assert led == [], "one index per state table may lead with organization_id or workflow_id: its key"


def test_foreign_keys_between_sharded_tables_carry_the_organization_and_never_cascade_an_update():
    tables = sharded()
    keys = query(
        """
        SELECT conrelid::regclass::text, confrelid::regclass::text, conname, confupdtype,
               (SELECT array_agg(a.attname ORDER BY a.attname) FROM pg_attribute a
                 WHERE a.attrelid = conrelid AND a.attnum = ANY(conkey))
          FROM pg_constraint WHERE contype = 'f' AND (conrelid::regclass::text = ANY(%s)
                                                       OR confrelid::regclass::text = ANY(%s))
        """,
        [tables, tables],
    )
    for source, target, name, on_update, columns in keys:
        assert on_update != "c", f"{name}: ON UPDATE CASCADE would rewrite a shard column"
        if target in tables:
            assert source in tables, f"{name}: a reference table ({source}) cannot point into sharded {target}"
            assert "organization_id" in columns, f"{name} must be composite with organization_id"


def test_no_trigger_has_a_transition_table():
    assert query(
        """
        SELECT t.tgname FROM pg_trigger t JOIN pg_class c ON c.oid = t.tgrelid
         WHERE c.relnamespace = 'public'::regnamespace AND NOT t.tgisinternal
           AND (t.tgoldtable IS NOT NULL OR t.tgnewtable IS NOT NULL)
        """
    ) == [], "statement triggers with transition tables do not fire on a distributed table; use FOR EACH ROW"


def test_every_store_function_takes_the_organization_as_p_org():
    functions = query(
        r"""
        SELECT p.proname, coalesce(p.proargnames, '{}') FROM pg_proc p
         WHERE p.pronamespace = 'public'::regnamespace AND p.proname LIKE 'keeperstate\_%%'
           AND p.prorettype <> 'trigger'::regtype
        """
    )
    assert {name for name, _ in functions} >= {
        "keeperstate_set_key", "keeperstate_create_key", "keeperstate_delete_key", "keeperstate_check_usage",
        "keeperstate_lock_usage", "keeperstate_reclaim_expired", "keeperstate_trim_history",
    }
    assert [name for name, args in functions if "p_org" not in args] == [], (
        "a store function must take the organization as p_org (create_distributed_function routes by it)"
    )


STATEMENTS = {
    **{f"sql.{index}": text for index, text in enumerate(sql.CURRENT_SQL)},
    **{f"store.{name}": getattr(store, name) for name in dir(store) if name.endswith("_SQL")},
    **{f"maintenance.{name}": getattr(maintenance, name) for name in dir(maintenance) if name.endswith("_SQL")},
}


@pytest.mark.parametrize("name", sorted(STATEMENTS))
def test_the_store_sends_nothing_a_distributed_planner_refuses(name):
    text = STATEMENTS[name]
    for conflict in re.findall(r"DO UPDATE\s+SET(.*?)(?:;|RETURNING|\Z)", text, re.S | re.I):
        assert "now()" not in conflict, f"{name}: now() in DO UPDATE SET (take it from EXCLUDED)"
    for update in re.findall(r"UPDATE\s+\w+(?:\s+AS)?\s+\w*\s*SET(.*?)(?:WHERE|;|\Z)", text, re.S | re.I):
        assert "to_jsonb(" not in update, f"{name}: a STABLE function over a column in an UPDATE"
    assert not re.search(r"FROM\s*\(\s*VALUES", text, re.I), f"{name}: a subquery over VALUES"
    assert "REFERENCING" not in text, f"{name}: a transition table"


def test_the_checks_fail_on_a_table_and_trigger_a_distributed_planner_would_refuse():
    # A new state table keyed by id alone, with a transition-table trigger: both checks catch it.
    with connection.cursor() as cursor:
        cursor.execute("CREATE TABLE workflow_state_probe (id bigserial PRIMARY KEY, organization_id bigint)")
        cursor.execute(
            "CREATE FUNCTION keeperstate_probe() RETURNS trigger LANGUAGE plpgsql AS $$ BEGIN RETURN NULL; END; $$"
        )
        cursor.execute(
            "CREATE TRIGGER keeperstate_probe AFTER INSERT ON workflow_state_probe REFERENCING NEW TABLE AS n "
            "FOR EACH STATEMENT EXECUTE FUNCTION keeperstate_probe()"
        )

    assert "workflow_state_probe" in sharded()
    with pytest.raises(AssertionError, match="must start with organization_id"):
        test_every_primary_and_unique_key_of_a_sharded_table_leads_with_organization_id()
    with pytest.raises(AssertionError, match="transition tables"):
        test_no_trigger_has_a_transition_table()
