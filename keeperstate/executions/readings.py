"""What a workflow's runs read of a state key, over a chart's range: the value each State Get or
State Increment node whose key is literally ``key`` recorded in each run, per bucket (the last,
lowest and highest, and how many runs read it).

The store keeps a key's newest changes only (KEEPERSTATE_HISTORY_PER_KEY, 50 by default): a
cursor written every block fills that in minutes. The runs' records reach back as far as runs are
kept, so the State panel's chart of a numeric key covers its whole range from them and draws the
exact changes of the history over it. One statement on the executions' key (organization,
workflow, queued_at), an aggregate per bucket.
"""

from __future__ import annotations

import json
from decimal import Decimal
from typing import Any

from django.db import connection

from keeperstate.core.buckets import EPOCH, Range, window
from keeperstate.workflows.models import Workflow

READERS = ("State Get", "State Increment")  # the actions whose output holds the key's value

READINGS_SQL = """
SELECT date_bin(%(step)s, e.queued_at, %(origin)s) AS bucket,
       (array_agg(r.value -> 'data' -> 'value' ORDER BY e.queued_at DESC, e.id DESC))[1],
       min((r.value -> 'data' ->> 'value')::numeric), max((r.value -> 'data' ->> 'value')::numeric), count(*)
  FROM workflow_execution e CROSS JOIN LATERAL jsonb_each(e.node_results) r
 WHERE e.organization_id = %(organization)s AND e.workflow_id = %(workflow)s
   AND e.queued_at >= %(start)s AND e.queued_at < %(end)s
   AND r.key = ANY(%(nodes)s) AND jsonb_typeof(r.value -> 'data' -> 'value') = 'number'
 GROUP BY 1
"""


def reading_nodes(workflow: Workflow, key: str) -> list[str]:
    """The ids of the nodes whose output is ``key``'s value: State Get and State Increment nodes
    whose key is that text (a key built from references is not known before the run)."""
    found = []
    for node in workflow.nodes if isinstance(workflow.nodes, list) else []:
        data = node.get("data") if isinstance(node, dict) else None
        config = data.get("config") if isinstance(data, dict) else None
        if isinstance(config, dict) and config.get("actionType") in READERS and config.get("key") == key:
            found.append(str(node.get("id")))
    return found


def _number(value: Decimal) -> int | float:
    return int(value) if value == value.to_integral_value() else float(value)


def key_readings(workflow: Workflow, key: str, span: Range) -> dict[str, Any]:
    """``{"range", "bucketSeconds", "nodes", "buckets": [{"start", "end", "last", "min", "max",
    "reads"}]}``: each bucket of ``span`` with what the runs queued in it read (``last`` null: none)."""
    nodes = reading_nodes(workflow, key)
    start, end = window(span)
    rows: dict[Any, list[Any]] = {}
    params: dict[str, Any] = {"step": span.step, "origin": EPOCH, "start": start, "end": end,
                              "organization": workflow.organization_id, "workflow": workflow.id, "nodes": nodes}
    if nodes:
        with connection.cursor() as cursor:
            cursor.execute(READINGS_SQL, params)
            rows = {bucket: rest for bucket, *rest in cursor.fetchall()}
    buckets = []
    for index in range(span.buckets):
        at = start + index * span.step
        last, low, high, reads = rows.get(at, [None, None, None, 0])
        if isinstance(last, str):
            last = json.loads(last)  # Django's connection reads jsonb as its text
        buckets.append({"start": at.isoformat(), "end": (at + span.step).isoformat(), "last": last,
                        "min": None if low is None else _number(low), "max": None if high is None else _number(high),
                        "reads": reads})
    return {"range": span.name, "bucketSeconds": int(span.step.total_seconds()), "nodes": nodes, "buckets": buckets}
