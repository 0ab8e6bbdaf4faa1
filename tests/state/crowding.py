"""A crowded organization the planner does not know yet, and what one statement reads in it.

Postgres estimates a value its statistics never saw (a new organization or workflow, before the
next ANALYZE) at a row or so; where two indexes both seem to find that one row, the smaller wins,
and a lookup can end up filtering a whole organization. These helpers build that situation and
count the pages a statement touched, so a test can hold a lookup to its key.
"""

from __future__ import annotations

import uuid
from collections.abc import Callable

from django.db import connection
from django.test.utils import CaptureQueriesContext


def buffers(sql: str, params: dict | None) -> int:
    """Shared buffers one statement touched, its triggers and functions included."""
    with connection.cursor() as cursor:
        cursor.execute("EXPLAIN (ANALYZE, BUFFERS, FORMAT JSON) " + sql, params)
        plan = cursor.fetchone()[0][0]["Plan"]
    return plan.get("Shared Hit Blocks", 0) + plan.get("Shared Read Blocks", 0)


def reads_of(action: Callable[[], object]) -> dict[str, int]:
    """Each SELECT that ``action`` sent through the ORM, with the shared buffers it touches when
    run again (its parameters as Django logged them)."""
    with CaptureQueriesContext(connection) as captured:
        action()
    return {q["sql"]: buffers(q["sql"], None) for q in captured.captured_queries if q["sql"].startswith("SELECT")}


def crowd_after_analyze(table: str, insert: str, scope, other_org, other_workflow_id=None) -> None:
    """20,000 rows of ``table`` in the scope's organization and workflow, written after an ANALYZE
    that saw only another organization's (5,000 rows, in ``other_workflow_id``, a new id when the
    table needs no workflow): the statistics take the organization and the workflow for one row
    each. ``insert`` takes the organization, workflow and row count."""
    with connection.cursor() as cursor:
        cursor.execute(insert, [other_org.id, other_workflow_id or uuid.uuid4(), 5000])
        cursor.execute(f"ANALYZE {table}")
        cursor.execute(insert, [scope.organization_id, scope.workflow_id, 20000])
