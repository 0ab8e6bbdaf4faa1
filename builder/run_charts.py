"""The small Runs charts of the workflow list: every listed workflow's last 24 hours, by status,
in the one aggregate statement of keeperstate.executions.stats (not a request per row)."""

from __future__ import annotations

from typing import Any

from keeperstate.core.buckets import RANGES
from keeperstate.executions.stats import run_stats_of
from keeperstate.workflows.models import Workflow

LIST_RANGE = RANGES["24h"]


def list_run_charts(workflows: list[Workflow]) -> dict[str, dict[str, Any]]:
    """``{workflow id: the stats answer}`` for workflows the caller listed for its user."""
    charts = run_stats_of(workflows=workflows, span=LIST_RANGE)
    return {str(workflow_id): chart for workflow_id, chart in charts.items()}
