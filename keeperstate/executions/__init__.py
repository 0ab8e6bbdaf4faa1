"""Executions: the one service every run goes through, whoever starts it.

The editor's Run, the API (sync or ``?async=true``), the webhook and the scheduler all call
``start_run``; the worker calls ``run_queued``. They share the input check, the execution
lifecycle (queued → running → success | error | interrupted, or skipped), the recorded node
results and the result shape, so no adapter re-implements a rule.
"""

from keeperstate.executions.service import (
    Started,
    WorkflowDeletedDuringRun,
    run_queued,
    run_workflow,
    start_run,
)

__all__ = ["Started", "WorkflowDeletedDuringRun", "run_queued", "run_workflow", "start_run"]
