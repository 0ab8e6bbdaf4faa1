"""Error workflows: when a run ends in ``error``, the workflow named by its ``settings.errorWorkflow``
(keeperstate.workflows.settings) is queued with the failed execution's summary as its input:

    {"execution": {"id", "status", "trigger", "error", "errorCode", "startedAt", "finishedAt", "input"},
     "workflow": {"id", "name"},
     "errorCode": "HTTP_STATUS",
     "failedNode": {"id", "label", "code", "error"} or null}

It is queued (trigger ``error``) with the failure's record, in its transaction (a run in one
commit: both or neither), and a worker runs it; failing to queue it (the organization's run rate,
the database) is logged and never undoes the record. A
run of trigger ``error`` starts nothing when it fails itself, so error workflows never chain or
loop. Pinned data is never used by it.
"""

from __future__ import annotations

import logging
from typing import Any

from django.db import DatabaseError, transaction

from keeperstate.core.errors import CodedError
from keeperstate.executions.models import WorkflowExecution
from keeperstate.workflows.models import Workflow
from keeperstate.workflows.settings import error_workflow_of

logger = logging.getLogger(__name__)

Status = WorkflowExecution.Status
Trigger = WorkflowExecution.Trigger


def error_input(execution: WorkflowExecution, workflow: Workflow) -> dict[str, Any]:
    """What an error workflow receives: the failed execution's summary (its documented input)."""
    failed = next(
        (node_id for node_id, result in (execution.node_results or {}).items()
         if isinstance(result, dict) and result.get("success") is False and result.get("code") == execution.error_code),
        None,
    )
    node = next((n for n in workflow.nodes if isinstance(n, dict) and n.get("id") == failed), None) if failed else None
    result: dict[str, Any] = execution.node_results[failed] if failed else {}
    return {
        "execution": {
            "id": str(execution.id),
            "status": execution.status,
            "trigger": execution.trigger,
            "error": execution.error,
            "errorCode": execution.error_code,
            "startedAt": execution.started_at.isoformat() if execution.started_at else None,
            "finishedAt": execution.finished_at.isoformat() if execution.finished_at else None,
            "input": execution.input,
        },
        "workflow": {"id": str(workflow.id), "name": workflow.name},
        "errorCode": execution.error_code,
        "failedNode": None if failed is None else {
            "id": failed,
            "label": ((node or {}).get("data") or {}).get("label") or failed,
            "code": result.get("code"),
            "error": result.get("error"),
        },
    }


def queue_error_run(execution: WorkflowExecution) -> WorkflowExecution | None:
    """Queue the error workflow of a run that ended in ``error``; None when there is none to run
    (no setting, the run is itself an error run, the error workflow is gone) or it could not be
    queued, which is logged and never undoes the failed run's record."""
    if execution.status != Status.ERROR or execution.trigger == Trigger.ERROR:
        return None
    workflow = execution.workflow
    target = error_workflow_of(workflow)
    if target is None:
        if isinstance(workflow.settings, dict) and workflow.settings.get("errorWorkflow"):
            logger.warning("execution %s of workflow %s failed; its error workflow %s is gone, nothing was started",
                           execution.pk, workflow.pk, workflow.settings["errorWorkflow"])
        return None
    from keeperstate.executions.service import queue_run  # the service calls this module at a run's end

    try:
        with transaction.atomic():
            started = queue_run(target, error_input(execution, workflow), trigger=Trigger.ERROR)
    except (CodedError, DatabaseError):
        logger.warning("execution %s of workflow %s failed; its error workflow %s could not be queued",
                       execution.pk, workflow.pk, target.pk, exc_info=True)
        return None
    logger.info("execution %s of workflow %s failed (%s); error workflow %s queued as execution %s",
                execution.pk, workflow.pk, execution.error_code, target.pk, started.execution.pk)
    return started.execution
