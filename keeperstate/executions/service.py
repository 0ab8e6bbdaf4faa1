"""The execution lifecycle: create and commit the record first, then run, then finish.

The record is committed (``queued`` or ``running``) before any action runs, and the result of
every node that may have changed something is written as soon as it exists, so after any fault a
client finds its run and what it did. A run is never replayed: only the process that moves an
execution from ``queued`` to ``running`` runs it, and a running execution whose process died is
closed as ``interrupted`` by housekeeping (keeperstate.executions.housekeeping), never started again.
"""

from __future__ import annotations

import functools
import logging
import uuid
from dataclasses import dataclass
from datetime import datetime
from typing import Any

from django.db import DatabaseError, IntegrityError, transaction
from django.utils import timezone

from keeperstate.core.errors import Code, CodedError
from keeperstate.core.rows import Insert
from keeperstate.engine.context import RunContext
from keeperstate.engine.graph import Graph
from keeperstate.engine.registry import get_action
from keeperstate.engine.results import NodeResult, Succeeded, result_from_json
from keeperstate.engine.runner import RunOutcome, check_input, run_graph, run_node
from keeperstate.executions import inprocess
from keeperstate.executions.lifecycle import claim_to_run, finish, record_progress
from keeperstate.executions.liveness import heartbeating
from keeperstate.executions.models import WorkflowExecution
from keeperstate.ratelimits.counters import check_org_run_rate
from keeperstate.state.store import one_key_transaction
from keeperstate.workflows.models import Workflow

logger = logging.getLogger(__name__)

Status = WorkflowExecution.Status
Trigger = WorkflowExecution.Trigger

MAX_IDEMPOTENCY_KEY = 200
# An execution's key to its workflow, (organization_id, workflow_id) (migration 0017).
_WORKFLOW_FK = "workflow_execution_workflow_org_fk"
# Every run inserts its record: as a statement written once (keeperstate.core.rows).
_INSERT = Insert(WorkflowExecution)


class WorkflowDeletedDuringRun(CodedError):
    error = Code.WORKFLOW_DELETED


class IdempotencyKeyInvalid(CodedError):
    error = Code.IDEMPOTENCY_KEY_INVALID


class RunNotRetryable(CodedError):
    error = Code.RUN_NOT_RETRYABLE


class StepWouldWrite(CodedError):
    error = Code.STEP_WOULD_WRITE


class StepNotRunnable(CodedError):
    error = Code.STEP_NOT_RUNNABLE


class StepNodeNotFound(CodedError):
    error = Code.NODE_NOT_FOUND


@dataclass(frozen=True)
class Started:
    execution: WorkflowExecution
    # True when an Idempotency-Key matched an earlier execution: nothing new was run.
    replayed: bool = False


def check_idempotency_key(raw: str | None) -> str | None:
    """The header's value, or None when absent; refused when empty or longer than 200 characters."""
    if raw is None:
        return None
    key = raw.strip()
    if not key or len(key) > MAX_IDEMPOTENCY_KEY or not key.isprintable():
        raise IdempotencyKeyInvalid(
            f"The Idempotency-Key header takes 1 to {MAX_IDEMPOTENCY_KEY} printable characters, "
            "e.g. a UUID you generate once per intended run.",
            field="Idempotency-Key",
        )
    return key


def start_run(
    workflow: Workflow,
    run_input: Any,
    *,
    trigger: str,
    user: Any = None,
    idempotency_key: str | None = None,
    scheduled_for: datetime | None = None,
    background: bool = False,
    wait: float | None = None,
    retry_of: WorkflowExecution | None = None,
) -> Started:
    """Record a run of ``workflow`` and either run it now (returning it finished) or queue it for a
    worker (returning it queued). A repeated Idempotency-Key returns the first execution.

    With ``wait`` (seconds; a webhook's ``?wait``), the run goes to this process's pool of waited
    runs (keeperstate.executions.inprocess) and is returned finished, or still ``running`` when it
    took longer than ``wait``; when every thread of the pool is busy it is queued for a worker."""
    run_input = check_input(run_input)
    if wait is not None and not background and not transaction.get_connection().in_atomic_block:
        return _start_waited(workflow, run_input, trigger=trigger, user=user, idempotency_key=idempotency_key,
                             retry_of=retry_of, wait=wait)
    # (In a caller's transaction, a test or ATOMIC_REQUESTS, the record stays uncommitted and no
    # other connection could see it: a waited run happens here, as the API's execute does.)
    started = _record(workflow, run_input, trigger=trigger, user=user, idempotency_key=idempotency_key,
                      scheduled_for=scheduled_for, retry_of=retry_of, queued=background)
    if not background and not started.replayed:
        _execute(started.execution, workflow)
    return started


def _record(workflow: Workflow, run_input: dict[str, Any], *, trigger: str, user: Any, idempotency_key: str | None,
            scheduled_for: datetime | None, retry_of: WorkflowExecution | None, queued: bool) -> Started:
    """Commit the run's record, ``queued`` (with its job) or ``running``; or find the execution of
    a repeated Idempotency-Key."""
    if idempotency_key is not None and (earlier := _by_idempotency_key(workflow, idempotency_key)) is not None:
        return Started(earlier, replayed=True)
    check_org_run_rate(workflow.organization_id)  # 429 THROTTLED past the organization's runs per minute
    now = timezone.now()
    if trigger in (Trigger.MANUAL, Trigger.API):
        run_input = with_schedule_fields(workflow.nodes, run_input, now)
    execution = WorkflowExecution(
        workflow=workflow,
        organization_id=workflow.organization_id,
        trigger=trigger,
        input=run_input,
        idempotency_key=idempotency_key,
        triggered_by=user if getattr(user, "pk", None) else None,
        queued_at=now,
        scheduled_for=scheduled_for,
        retry_of=retry_of,
    )
    if not queued:
        execution.status, execution.started_at, execution.heartbeat_at = Status.RUNNING, now, now
    try:
        with transaction.atomic():
            _INSERT.save(execution)
            if queued:
                enqueue(execution)
    except IntegrityError as exc:
        if getattr(getattr(exc.__cause__, "diag", None), "constraint_name", None) == _WORKFLOW_FK:
            # The workflow left this organization (hard-deleted, or moved: keeperstate/workflows/move.py)
            # between reading it and recording its run.
            raise WorkflowDeletedDuringRun(
                "The workflow was deleted or moved to another organization while this run was being "
                "recorded, so nothing was run. Look the workflow up again and run it there."
            ) from None
        # Two requests with one Idempotency-Key raced; the constraint let one in.
        earlier = _by_idempotency_key(workflow, idempotency_key) if idempotency_key else None
        if earlier is None:
            raise
        return Started(earlier, replayed=True)
    return Started(execution)


def _start_waited(workflow: Workflow, run_input: dict[str, Any], *, trigger: str, user: Any,
                  idempotency_key: str | None, retry_of: WorkflowExecution | None, wait: float) -> Started:
    record = functools.partial(_record, workflow, run_input, trigger=trigger, user=user,
                               idempotency_key=idempotency_key, scheduled_for=None, retry_of=retry_of)
    if not inprocess.reserve():  # every thread of the pool is busy: a worker runs it
        return record(queued=True)
    try:
        started = record(queued=False)
    except BaseException:
        inprocess.release()
        raise
    if started.replayed:
        inprocess.release()
        return started
    execution = started.execution
    if inprocess.run_reserved(functools.partial(_execute, execution, workflow), wait):
        return started
    # Still going in the pool: the caller answers with a copy that does not change under it.
    return Started(WorkflowExecution(pk=execution.pk, workflow_id=workflow.pk, status=Status.RUNNING))


def with_schedule_fields(nodes: Any, run_input: dict[str, Any], now: datetime) -> dict[str, Any]:
    """A run started by hand (the editor's Run, the API) of a workflow whose trigger is a Schedule
    runs as a tick at ``now`` would: ``scheduledFor`` and ``firedAt``, where its input lacks them,
    are the current time, so the graph's references to them resolve as on a scheduled run. What
    the input gives is kept; other triggers' inputs are left as they are."""
    if not _has_schedule_trigger(nodes) or ("scheduledFor" in run_input and "firedAt" in run_input):
        return run_input
    at = now.isoformat()
    return {"scheduledFor": at, "firedAt": at, **run_input}


def _has_schedule_trigger(nodes: Any) -> bool:
    if not isinstance(nodes, list):
        return False
    triggers = [n for n in nodes if isinstance(n, dict) and n.get("type") == "trigger"]
    data = triggers[0].get("data") if len(triggers) == 1 else None
    config = data.get("config") if isinstance(data, dict) else None
    return isinstance(config, dict) and config.get("triggerType") == "Schedule"


def run_workflow(workflow: Workflow, run_input: Any = None, *, trigger: str = Trigger.MANUAL, user: Any = None) -> (
    WorkflowExecution
):
    """Run a saved workflow now and return its finished execution (the editor, the CLI, tests)."""
    return start_run(workflow, run_input, trigger=trigger, user=user).execution


RETRYABLE = (Status.ERROR, Status.INTERRUPTED)


def retry_run(execution: WorkflowExecution, *, trigger: str, user: Any = None, background: bool = False) -> Started:
    """Run a failed or interrupted execution's workflow again with the same input, as a new
    execution linked to it (``retry_of``). The first is left as it was: a run is never replayed
    in place, and what it wrote stays written (the saved graph of now runs, not the one of then)."""
    if execution.status not in RETRYABLE:
        raise RunNotRetryable(
            f"This run {execution.get_status_display().lower()}; only a failed or interrupted run can be "
            "retried. Run the workflow to start a new one."
        )
    return start_run(execution.workflow, execution.input, trigger=trigger, user=user, background=background,
                     retry_of=execution)


@dataclass(frozen=True)
class StepResult:
    node_id: str
    result: dict[str, Any]  # the node's result in its JSON shape, as an execution records it
    handle: str | None
    wrote: bool  # the node may have written the workflow's state
    source: WorkflowExecution | None


def run_step(
    workflow: Workflow, node_id: str, *, source: WorkflowExecution | None, allow_writes: bool = False
) -> StepResult:
    """Run one node of the saved graph with the results of ``source`` (an earlier run of the same
    workflow) as its upstream outputs, through the runner's own run_node: references resolve as in
    that run. Nothing is recorded as an execution. A node that writes state runs only with
    ``allow_writes``, in the workflow's own scope (the state a run sees), in one transaction."""
    graph = Graph.parse(workflow.nodes, workflow.edges)
    if node_id not in graph.nodes:
        raise StepNodeNotFound(f"The saved workflow has no node '{node_id}'. Save the workflow first.", field="node")
    definition = get_action(graph.action_type(node_id) or "")
    if node_id == graph.trigger_id() or definition is None or definition.loop:
        raise StepNotRunnable(
            "Only an action node can be tested on its own: the trigger's output is the run input, and a "
            "For Each runs its body (test its body's nodes one by one).", field="node")
    if definition.side_effects and not allow_writes:
        raise StepWouldWrite(
            f"'{graph.labels()[node_id]}' writes to this workflow's state (the state its runs read). Send "
            "allowWrites: true to test it anyway.", field="allowWrites")
    check_org_run_rate(workflow.organization_id)
    results: dict[str, NodeResult] = {
        nid: result_from_json(value) for nid, value in (source.node_results if source else {}).items()
    }
    if source is not None:
        results[graph.trigger_id()] = Succeeded(source.input)
    else:
        results.setdefault(graph.trigger_id(), Succeeded({}))
    ctx = RunContext(organization_id=workflow.organization_id, workflow_id=workflow.id)
    with one_key_transaction() if definition.side_effects else transaction.atomic():
        result = run_node(graph, node_id, results, graph.labels(), ctx)
    handle = result.handle if isinstance(result, Succeeded) else None
    return StepResult(node_id=node_id, result=result.to_json(), handle=handle, wrote=definition.side_effects,
                      source=source)


def record_skipped(workflow: Workflow, tick: datetime) -> WorkflowExecution:
    """A schedule tick not run because the previous run is still going (``overlap: skip``)."""
    now = timezone.now()
    return WorkflowExecution.objects.create(
        workflow=workflow,
        trigger=Trigger.SCHEDULE,
        status=Status.SKIPPED,
        scheduled_for=tick,
        input={"scheduledFor": tick.isoformat(), "firedAt": now.isoformat()},
        queued_at=now,
        finished_at=now,
        error=Code.RUN_SKIPPED.message,
        error_code=Code.RUN_SKIPPED.name,
    )


def enqueue(execution: WorkflowExecution) -> None:
    """Queue a job for the execution; called inside the transaction that creates it, so the job
    exists exactly when the record does (Procrastinate writes through Django's connection)."""
    from keeperstate.executions.tasks import defer_run  # imports Procrastinate's app, ready only at run time

    defer_run(str(execution.id), execution.organization_id)


def run_queued(execution_id: str | uuid.UUID, organization_id: int | None = None) -> WorkflowExecution | None:
    """Run a queued execution (the worker's job). Returns None when it is not queued any more:
    another worker started it, or it was interrupted; a run is never started twice. The job
    names the execution's organization (a job queued before it did finds the run by id alone)."""
    execution = claim_to_run(execution_id, timezone.now(), organization_id=organization_id)
    if execution is None:
        logger.info("execution %s is not queued any more; not running it again", execution_id)
        return None
    workflow = execution.workflow
    if workflow.deleted_at is not None:
        _finish(execution, _failed(Code.WORKFLOW_DELETED, "The workflow was deleted before this run could start."))
        return execution
    try:
        _execute(execution, workflow)
    except WorkflowDeletedDuringRun:
        logger.info("workflow %s was deleted during execution %s", workflow.pk, execution_id)
        return None
    return execution


def _execute(execution: WorkflowExecution, workflow: Workflow) -> None:
    ctx = RunContext(organization_id=workflow.organization_id, workflow_id=workflow.id, execution_id=execution.id)
    finished = False
    recorded: dict[str, NodeResult] = {}

    def record(outcome: RunOutcome, final: bool) -> None:
        # Inside the node's transaction: the node's writes and this record commit together.
        nonlocal finished, recorded
        recorded = dict(outcome.results)
        if final:
            _finish(execution, outcome)
            finished = True
        else:
            record_progress(execution, outcome.results_json(), timezone.now())

    try:
        with heartbeating(execution):
            outcome = run_graph(
                workflow.nodes, workflow.edges, execution.input, ctx,
                # one node writes at most one key: the store may use its fast usage check
                on_progress=record, node_transaction=one_key_transaction,
            )
    except (DatabaseError, WorkflowDeletedDuringRun):
        # DatabaseError: the record cannot be written now; the client's answer says so (503), and
        # housekeeping closes the execution as interrupted with the node results recorded so far.
        logger.warning("execution %s could not be recorded to its end", execution.pk, exc_info=True)
        raise
    except Exception:
        logger.exception("execution %s failed outside any action", execution.pk)
        outcome = _failed(
            Code.RUN_INTERNAL_ERROR,
            "The run stopped on an internal error, which was logged for the administrators. "
            "The node results show what ran before it.",
            results=recorded,
        )
        finished = False
    if not finished:
        _finish(execution, outcome)


def _finish(execution: WorkflowExecution, outcome: RunOutcome) -> None:
    execution.node_results = outcome.results_json()
    execution.status = Status.SUCCESS if outcome.ok else Status.ERROR
    execution.error, execution.error_code = outcome.error, outcome.error_code
    execution.finished_at = timezone.now()
    # From running, or from interrupted: a run housekeeping took for dead still gets its real
    # outcome (keeperstate.executions.lifecycle).
    moved = finish(execution, execution.status, node_results=execution.node_results, error=execution.error,
                   error_code=execution.error_code, finished_at=execution.finished_at)
    if not moved and not WorkflowExecution.objects.filter(
        organization_id=execution.organization_id, pk=execution.pk
    ).exists():
        raise WorkflowDeletedDuringRun(
            "The workflow was deleted while this run was in progress, and its executions and state went "
            "with it. Nothing more can be learned about this run."
        )


def _failed(error: Code, message: str, *, results: dict[str, NodeResult] | None = None) -> RunOutcome:
    return RunOutcome(results=results or {}, error=message, error_code=error.name)


def _by_idempotency_key(workflow: Workflow, key: str) -> WorkflowExecution | None:
    # By the unique key (organization, workflow, idempotency key): without the organization,
    # Postgres before 18 read every run of the workflow for it.
    return WorkflowExecution.objects.filter(
        organization_id=workflow.organization_id, workflow=workflow, idempotency_key=key
    ).first()
