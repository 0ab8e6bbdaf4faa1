"""The migrated database holds exactly the current SQL of workflow state (keeperstate/state/sql.py).

Migrations carry their SQL frozen, so nothing ties a change in state/sql.py to the database but
these tests: they fail when someone changes a body there without a migration that installs it,
or when a migration installs SQL that state/sql.py does not show.

How they compare: the current text is run, as a migration would run it, in a scratch schema
(with empty copies of the tables its triggers are on), and Postgres's own rendering of each
function (``pg_get_functiondef``: the body, ``pg_proc.prosrc``, verbatim, with the signature,
result and language) and trigger (``pg_get_triggerdef``: timing, events, WHEN clause, transition
tables) there is compared with its rendering of what the migrations installed.
"""

from __future__ import annotations

import ast
import re
from pathlib import Path

import pgtrigger
import pytest
from django.db import connection, transaction

from keeperstate.state import sql

pytestmark = pytest.mark.django_db

SCRATCH = "keeperstate_current_sql"
MIGRATIONS = Path(__file__).resolve().parents[2] / "keeperstate" / "migrations"

# Ours are named keeperstate_*; pgtrigger's (pgtrigger_*) are checked by pgtrigger itself below.
FUNCTIONS = """
SELECT p.proname || '(' || pg_get_function_identity_arguments(p.oid) || ')', pg_get_functiondef(p.oid)
  FROM pg_proc p
 WHERE p.pronamespace = %(schema)s::regnamespace AND p.proname LIKE 'keeperstate\\_%%'
"""
TRIGGERS = """
SELECT t.tgname || ' ON ' || c.relname, pg_get_triggerdef(t.oid)
  FROM pg_trigger t JOIN pg_class c ON c.oid = t.tgrelid
 WHERE c.relnamespace = %(schema)s::regnamespace AND NOT t.tgisinternal AND t.tgname LIKE 'keeperstate\\_%%'
"""
# The tables the current triggers are created on: "CREATE OR REPLACE TRIGGER name … ON table …".
TRIGGER_TABLE = re.compile(r"CREATE OR REPLACE TRIGGER\s.*?\sON\s+(\w+)\s", re.S)


def definitions(schema: str) -> dict[str, str]:
    """Every keeperstate_* function and trigger in ``schema``, as Postgres renders it, schema names left out."""
    found = {}
    with connection.cursor() as cursor:
        for kind, query in (("function", FUNCTIONS), ("trigger", TRIGGERS)):
            cursor.execute(query, {"schema": schema})
            for name, text in cursor.fetchall():
                found[f"{kind} {name}"] = text.replace(f"{schema}.", "")
    return found


def current_definitions() -> dict[str, str]:
    """What keeperstate/state/sql.py would install, as Postgres renders it; nothing of it is kept."""
    current = "\n".join(sql.CURRENT_SQL)
    with transaction.atomic(), connection.cursor() as cursor:
        cursor.execute(f"CREATE SCHEMA {SCRATCH}")
        for table in sorted(set(TRIGGER_TABLE.findall(current))):
            cursor.execute(f"CREATE TABLE {SCRATCH}.{table} (LIKE public.{table})")
        # Unqualified names in the current text now create (and find) the scratch schema's objects.
        cursor.execute(f"SET LOCAL search_path = {SCRATCH}, public")
        for statement in connection.ops.prepare_sql_script(current):  # as RunSQL splits a migration's SQL
            cursor.execute(statement)
        found = definitions(SCRATCH)
        transaction.set_rollback(True)  # the schema, its objects and the search_path go
    return found


def test_the_database_holds_every_function_and_trigger_of_state_sql_and_no_other():
    installed, current = definitions("public"), current_definitions()

    assert sorted(installed.keys() - current.keys()) == [], "installed by a migration, missing in state/sql.py"
    assert sorted(current.keys() - installed.keys()) == [], "in state/sql.py, installed by no migration"


def test_each_function_and_trigger_in_the_database_is_exactly_the_text_of_state_sql():
    installed, current = definitions("public"), current_definitions()

    for name in sorted(current.keys() & installed.keys()):
        assert installed[name] == current[name], (
            f"{name} in the migrated database is not what keeperstate/state/sql.py says. Changing a body "
            "there needs a migration that carries the new text frozen (as 0013 does)."
        )


def test_the_current_sql_covers_what_the_store_and_the_triggers_call():
    current = current_definitions()
    names = {name.split()[1].split("(")[0] for name in current}

    assert {
        "keeperstate_set_key", "keeperstate_delete_key", "keeperstate_create_key", "keeperstate_check_usage",
        "keeperstate_lock_usage", "keeperstate_reclaim_expired", "keeperstate_trim_history",
        "keeperstate_workflow_state_history_gone",
    } <= names
    assert {f"keeperstate_state_{name}" for name, *_ in sql._TRIGGERS} <= names


def test_pgtriggers_of_the_models_are_installed_as_the_models_define_them():
    # pgtrigger compares the hash of each model trigger's definition with the one it installed.
    for model, trigger in pgtrigger.registered():
        assert trigger.get_installation_status(model) == ("INSTALLED", True), trigger.get_pgid(model)


@pytest.mark.parametrize("path", sorted(MIGRATIONS.glob("0*.py")), ids=lambda path: path.stem)
def test_no_migration_imports_the_state_modules(path):
    # A migration that imports keeperstate/state/sql.py would install tomorrow's text, not its own.
    imported = set()
    for node in ast.walk(ast.parse(path.read_text())):
        if isinstance(node, ast.Import):
            imported.update(alias.name for alias in node.names)
        elif isinstance(node, ast.ImportFrom) and node.module:
            imported.add(node.module)

    assert not {name for name in imported if name.startswith("keeperstate.state")}
