"""The check of the statements the suite sends (tests/sharding/): it names what leaves a shard,
lets through what stays on one or is on docs/scaling.md's fan-out list, and fails a run in which
the product sends a statement that does neither."""

from __future__ import annotations

import os
import re
import subprocess
import sys
from pathlib import Path

import pytest
from django.db import connection

from tests.sharding import fanout, planted_statement, recording
from tests.sharding.statements import findings

ROOT = Path(__file__).resolve().parents[2]


def rules(sql: str) -> list[str]:
    return sorted(f"{f.rule} {f.table}" for f in findings(sql))


@pytest.mark.parametrize(("sql", "expected"), [
    # what the issue found on a real cluster, as sent
    ('SELECT "workflow"."id" FROM "workflow" WHERE "workflow"."id" = %s FOR UPDATE', ["lock workflow"]),
    ('SELECT e.id FROM "workflow_execution" e INNER JOIN "workflow" w ON (e."workflow_id" = w."id") '
     'WHERE e."id" = %s', ["join e & w", "unconstrained workflow", "unconstrained workflow_execution"]),
    ("DELETE FROM workflow_state WHERE id = ANY(%(ids)s)", ["unconstrained workflow_state"]),
    ("SELECT s.key FROM workflow_state s JOIN workflow w ON w.id = s.workflow_id WHERE s.organization_id = %s",
     ["join s & w", "unconstrained workflow"]),
    # a correlated subquery on the workflow's id alone is a join too
    ("SELECT w.id, (SELECT e.status FROM workflow_execution e WHERE e.workflow_id = w.id LIMIT 1) FROM workflow w "
     "WHERE w.organization_id = %s", ["join e & w", "unconstrained workflow_execution"]),
    ("UPDATE workflow SET organization_id = %s WHERE organization_id = %s AND id = %s", ["moves workflow"]),
    ("INSERT INTO workflow_state (workflow_id, key, value) VALUES (%s, %s, %s)", ["unrouted workflow_state"]),
    ("SELECT id FROM workflow WHERE organization_id IN (%s, %s)", ["unconstrained workflow"]),
])
def test_a_statement_that_leaves_its_shard_is_named(sql, expected):
    assert rules(sql) == expected


@pytest.mark.parametrize("sql", [
    "SELECT 1 FROM workflow WHERE organization_id = %s AND id = %s FOR UPDATE",
    'SELECT 1 FROM "workflow" WHERE ("workflow"."organization_id" IN (%s) AND "workflow"."id" = %s)',
    "SELECT 1 FROM workflow WHERE organization_id = ANY(ARRAY[%(org)s]) AND id = %(id)s",
    "SELECT e.id FROM workflow_execution e JOIN workflow w ON w.organization_id = e.organization_id "
    "AND w.id = e.workflow_id WHERE e.organization_id = %s AND e.id = %s",
    "SELECT s.key, (SELECT w.name FROM workflow w WHERE w.organization_id = s.organization_id AND w.id = s.workflow_id)"
    " FROM workflow_state s WHERE s.organization_id = %s",
    "WITH e AS (UPDATE workflow_execution SET status = %(to)s WHERE organization_id = %(org)s AND id = %(id)s "
    "RETURNING *) SELECT e.id FROM e JOIN workflow w ON w.organization_id = %(org)s AND w.id = e.workflow_id",
    "INSERT INTO workflow_state (organization_id, workflow_id, key, value) VALUES (%s, %s, %s, %s)",
    "SELECT version FROM keeperstate_set_key(%(org)s, %(wf)s, %(key)s)",
    "SELECT 100 %% 7 FROM organization WHERE id = %s",  # not a sharded table
])
def test_a_statement_on_one_shard_passes(sql):
    assert findings(sql) == []


@pytest.mark.parametrize(("sql", "origin"), [
    ("SELECT id FROM workflow WHERE id = %s", "product"),
    ('SELECT 1 FROM "workflow" w WHERE w."id" = %s AND w."organization_id" IN '
     '(SELECT m."organization_id" FROM "membership" m WHERE m."user_id" = %s)', "product"),
    ("SELECT DISTINCT organization_id FROM workflow_state WHERE expires_at <= now() ORDER BY 1", "product"),
    ("SELECT count(*) FROM workflow", "admin"),
    ("DELETE FROM workflow WHERE id = ANY(%s)", "bench"),
])
def test_a_documented_fan_out_is_allowed(sql, origin):
    assert findings(sql)
    assert fanout.allowed(sql, findings(sql), origin=origin)


@pytest.mark.parametrize(("sql", "origin"), [
    ("SELECT id FROM workflow WHERE id = %s FOR UPDATE", "product"),  # a lock, never
    ("UPDATE workflow SET active = false WHERE id = %s", "product"),  # a write by id alone
    ("SELECT count(*) FROM workflow", "product"),  # a whole table read outside the admin
    ("DELETE FROM workflow_state WHERE id = %s", "admin"),  # the admin's writes name the organization
    ("SELECT s.key FROM workflow_state s JOIN workflow w ON w.id = s.workflow_id", "admin"),  # a join, never
])
def test_what_the_list_does_not_cover_is_not_allowed(sql, origin):
    assert not fanout.allowed(sql, findings(sql), origin=origin)


def test_every_fan_out_is_in_docs_scaling_md_and_the_page_lists_no_other():
    page = (ROOT / "docs" / "scaling.md").read_text()
    table = page.split("**Fans out**", 1)[1].split("\n\n", 2)[1]
    named = set(re.findall(r"^\| \*\*(.+?)\*\*", table, re.M))
    assert named == {entry.name for entry in fanout.FAN_OUTS}


@pytest.mark.django_db
def test_the_recorder_names_a_planted_statement_the_product_sends(workflow):
    recorder = recording.Recorder(origin=lambda: "product")  # as if a product module sent it
    planted = "UPDATE workflow SET active = active WHERE id = %s"

    with connection.execute_wrapper(recorder), connection.cursor() as cursor:
        cursor.execute(planted, [workflow.id])
        cursor.execute("SELECT id FROM workflow WHERE organization_id = %s AND id = %s FOR UPDATE",
                       [workflow.organization_id, workflow.id])

    assert [(sql, found) for sql, _test, found in recorder.violations()] == [
        (planted, ["unconstrained: workflow (organization_id of 'workflow' is not held to one value)"])
    ]


def test_a_run_in_which_the_product_sends_a_planted_statement_fails():
    # given a test in which a product module writes a workflow by its id alone
    # (tests/sharding/planted_statement.py)
    # when it runs as the suite runs
    run = subprocess.run(
        [sys.executable, "-m", "pytest", "tests/sharding/planted_statement.py", "-q", "-p", "no:cacheprovider"],
        cwd=ROOT, env=os.environ, capture_output=True, text=True, timeout=600,
    )

    # then its test passed, and the run failed on the statement, named with the test that sent it
    assert "1 passed" in run.stdout, run.stdout + run.stderr
    assert run.returncode == pytest.ExitCode.TESTS_FAILED, run.stdout
    assert "planted_statement.py::test_planted: unconstrained: workflow" in run.stdout
    assert planted_statement.PLANTED in run.stdout
