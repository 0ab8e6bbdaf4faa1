"""Every run, whoever starts it, and how it is recorded: one function per way a run starts.

- ``run_now``: run in this thread and return the finished execution (the API's execute, MCP, the
  editor's Run, ``manage.py run_workflow``);
- ``queue_run``: record it ``queued`` with its job, for a worker (``?async=true``, webhooks, the
  scheduler's ticks);
- ``run_waited``: run it in this process's pool while the caller waits up to ``wait`` seconds (a
  webhook's ``?wait``), or queue it when the pool is busy;
- ``run_queued``: a worker's job;
- ``retry_run``: a failed or interrupted run's input again, as a new execution.

And one node alone, through the runner's own node step: ``run_step`` (a node of a saved
workflow, the editor's Test step) and ``run_alone`` (an action outside any workflow, direct node
execution). Every one of them counts against the organization's runs per minute.

A run commits as often as its effects need (docs/runs.md, ADR 0073):

- **No egress node** (its nodes only read and write the store): the whole run is one transaction
  holding the state writes, the node results and the record, committed once at its end. If the
  process dies first, nothing happened: the Idempotency-Key, the tick or the queue runs it again.
  A statement the database refuses inside it (a limit, a deadlock) rolls it all back, and the run
  goes again the second way.
- **An egress node** (HTTP Request): what it did outside cannot be taken back, so its record is
  committed ``running`` before any node runs, and each node that may change something commits
  with the record of its result; a run whose process died is closed as ``interrupted`` by
  housekeeping (keeperstate.executions.housekeeping), never started again.

A run is never replayed: only the process that moves an execution from ``queued`` to
``running`` runs it (a worker's claim, inside its run's transaction when there is one).
"""

from __future__ import annotations

import copy
import logging
import uuid
from collections.abc import Callable
from concurrent.futures import Future
from concurrent.futures import TimeoutError as FutureTimeout
from dataclasses import dataclass
from datetime import datetime
from typing import Any

from django.db import DatabaseError, IntegrityError, OperationalError, transaction
from django.utils import timezone

from keeperstate.core.errors import Code, CodedError
from keeperstate.core.sharding import names_constraint
from keeperstate.core.transactions import (
    checked_connection,
    connection_broken,
    current_connection,
    transaction_aborted,
)
from keeperstate.engine.context import RunContext
from keeperstate.engine.fields import parse_config
from keeperstate.engine.graph import Graph
from keeperstate.engine.pins import pinned_outputs
from keeperstate.engine.registry import get_action
from keeperstate.engine.results import Failed, NodeResult, Succeeded, result_from_json
from keeperstate.engine.runner import (
    RunOutcome,
    UnknownAction,
    check_input,
    reaches_outside,
    run_graph,
    run_node,
    writes_at_most_once,
)
from keeperstate.engine.scope import TRIGGER_TYPE, trigger_config, trigger_of
from keeperstate.executions import inprocess
from keeperstate.executions.error_runs import queue_error_run
from keeperstate.executions.lifecycle import by_idempotency_key, claim_to_run, end, insert, record_progress
from keeperstate.executions.liveness import heartbeating
from keeperstate.executions.models import WorkflowExecution
from keeperstate.ops import availability
from keeperstate.ratelimits.counters import RunCount, check_org_run_rate, count_run_ahead
from keeperstate.state.store import at_most_one_key, one_key_transaction, whole_run_transaction
from keeperstate.workflows.models import Workflow

logger = logging.getLogger(__name__)

Status = WorkflowExecution.Status
Trigger = WorkflowExecution.Trigger

MAX_IDEMPOTENCY_KEY = 200
# An execution's key to its workflow, (organization_id, workflow_id), and its
# primary key, (organization_id, id).
_WORKFLOW_FK = "workflow_execution_workflow_org_fk"
_PRIMARY_KEY = "workflow_execution_pkey"
# How long a caller that stopped waiting for a run in one commit waits more, once it has made
# the run findable, when the run was ending at that instant (its record then exists already).
_ENDING_SECONDS = 10.0
# The node a direct node execution runs, after a trigger whose output is its input.
DIRECT_TRIGGER_ID, DIRECT_TRIGGER_LABEL, DIRECT_NODE_ID = "trigger", "Trigger", "node"


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


class _RunAgain(Exception):
    """A run's one transaction was aborted by a statement the database refused: it was rolled
    back whole, so nothing of it happened, and it runs again node by node."""


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


# -- the ways a run starts ----------------------------------------------------------------------


def run_now(
    workflow: Workflow,
    run_input: Any,
    *,
    trigger: str,
    user: Any = None,
    idempotency_key: str | None = None,
    retry_of: WorkflowExecution | None = None,
) -> Started:
    """Run ``workflow`` in this thread and return its finished execution. A repeated
    Idempotency-Key returns the first execution instead."""
    run_input = check_input(run_input)
    if (earlier := _earlier(workflow, idempotency_key)) is not None:
        return Started(earlier, replayed=True)
    execution = _new(workflow, run_input, trigger=trigger, user=user, idempotency_key=idempotency_key,
                     retry_of=retry_of, status=Status.RUNNING)
    if reaches_outside(workflow.nodes):
        check_org_run_rate(workflow.organization_id)  # 429 THROTTLED past the organization's runs per minute
        return _recorded_first(execution, workflow)
    # Counted with the run's first statement, and checked before its commit (_run_and_end).
    return _in_one_commit(execution, workflow, counts_run=True)


def queue_run(
    workflow: Workflow,
    run_input: Any,
    *,
    trigger: str,
    user: Any = None,
    idempotency_key: str | None = None,
    scheduled_for: datetime | None = None,
    retry_of: WorkflowExecution | None = None,
) -> Started:
    """Record a run of ``workflow`` as ``queued`` with its job, committed together, and return it;
    a worker runs it (``run_queued``). A repeated Idempotency-Key returns the first execution; a
    second run for one scheduled tick is refused by the database (IntegrityError)."""
    run_input = check_input(run_input)
    if (earlier := _earlier(workflow, idempotency_key)) is not None:
        return Started(earlier, replayed=True)
    # Counted with the record's insert, and checked before it commits (count_run_ahead).
    count = count_run_ahead(workflow.organization_id)
    execution = _new(workflow, run_input, trigger=trigger, user=user, idempotency_key=idempotency_key,
                     retry_of=retry_of, status=Status.QUEUED, scheduled_for=scheduled_for)

    def write() -> None:
        with transaction.atomic():
            insert(execution)
            enqueue(execution)
            count.check()  # over the organization's limit: the record and its job roll back (429)

    try:
        if (earlier := _recorded(execution, workflow, write)) is not None:
            return Started(earlier, replayed=True)
    finally:
        count.withdraw()
    return Started(execution)


def run_waited(
    workflow: Workflow, run_input: Any, *, trigger: str, idempotency_key: str | None = None, wait: float
) -> Started:
    """Run ``workflow`` on a thread of this process's pool of waited runs
    (keeperstate.executions.inprocess) and return it finished, or still running when it took
    longer than ``wait`` seconds (it goes on); when every thread of the pool is busy it is queued
    for a worker (returned ``queued``). A repeated Idempotency-Key returns the first execution."""
    if transaction.get_connection().in_atomic_block:
        # In a caller's transaction (a test, ATOMIC_REQUESTS) nothing it writes is seen by another
        # connection: the run happens here, as the API's execute does.
        return run_now(workflow, run_input, trigger=trigger, idempotency_key=idempotency_key)
    run_input = check_input(run_input)
    if (earlier := _earlier(workflow, idempotency_key)) is not None:
        return Started(earlier, replayed=True)
    if not inprocess.reserve():  # every thread of the pool is busy: a worker runs it
        return queue_run(workflow, run_input, trigger=trigger, idempotency_key=idempotency_key)
    try:
        check_org_run_rate(workflow.organization_id)
        execution = _new(workflow, run_input, trigger=trigger, user=None, idempotency_key=idempotency_key,
                         retry_of=None, status=Status.RUNNING)
        in_one_commit = not reaches_outside(workflow.nodes)
        if not in_one_commit and (earlier := _recorded(execution, workflow, lambda: _insert(execution))):
            inprocess.release()
            return Started(earlier, replayed=True)
    except BaseException:
        inprocess.release()
        raise
    as_started = None
    if in_one_commit:
        # The record the caller writes should it stop waiting: the execution as it starts, taken
        # now, since the run changes its own instance as it goes (its results, its end).
        as_started = _copy(execution)
        job: Callable[[], Started] = lambda: _in_one_commit(execution, workflow, beating=True)  # noqa: E731
    else:
        job = lambda: _node_by_node(execution, workflow)  # noqa: E731
    future = inprocess.run_reserved(job, wait)
    if future.done():
        return future.result()
    if as_started is not None and not _made_findable(as_started, future):
        return future.result()  # it ended as the caller stopped waiting
    # Still going in the pool: the caller answers with a copy that does not change under it.
    return Started(WorkflowExecution(pk=execution.pk, workflow_id=workflow.pk, status=Status.RUNNING))


def run_queued(execution_id: str | uuid.UUID, organization_id: int | None = None) -> WorkflowExecution | None:
    """Run a queued execution (the worker's job). Returns None when it is not queued any more:
    another worker started it, or it was interrupted; a run is never started twice. The job
    names the execution's organization (a job queued before it did finds the run by id alone).

    A run in one commit claims its execution inside its transaction: if the worker dies before
    the commit, the execution is still queued, and Procrastinate gives the job to another worker."""
    connection_before = checked_connection()
    try:
        with whole_run_transaction():
            execution = claim_to_run(execution_id, timezone.now(), organization_id=organization_id)
            if execution is None:
                logger.info("execution %s is not queued any more; not running it again", execution_id)
                return None
            workflow = execution.workflow
            if workflow.deleted_at is not None:
                _end(execution, _failed(Code.WORKFLOW_DELETED, "The workflow was deleted before this run could start."))
                return execution
            node_by_node = reaches_outside(workflow.nodes)
            if not node_by_node:
                _run_and_end(execution, workflow)
                return execution
        # (an egress node: the claim is committed, the record says running, and it runs node by node)
    except _RunAgain:
        _unless_lost(connection_before)  # lost: the job fails, and housekeeping queues the run again
        execution = claim_to_run(execution_id, timezone.now(), organization_id=organization_id)
        if execution is None:
            return None
        workflow = execution.workflow
    except WorkflowDeletedDuringRun:
        logger.info("the workflow of execution %s was deleted during it", execution_id)
        return None
    try:
        _NodeByNode(execution).run(workflow)
    except WorkflowDeletedDuringRun:
        logger.info("workflow %s was deleted during execution %s", workflow.pk, execution_id)
        return None
    return execution


RETRYABLE = (Status.ERROR, Status.INTERRUPTED)


def retry_run(execution: WorkflowExecution, *, trigger: str, user: Any = None, background: bool = False) -> Started:
    """Run a failed or interrupted execution's workflow again with the same input, as a new
    execution linked to it (``retry_of``), now or queued. The first is left as it was: a run is
    never replayed in place, and what it wrote stays written (the saved graph of now runs, not
    the one of then)."""
    if execution.status not in RETRYABLE:
        raise RunNotRetryable(
            f"This run {execution.get_status_display().lower()}; only a failed or interrupted run can be "
            "retried. Run the workflow to start a new one."
        )
    start = queue_run if background else run_now
    return start(execution.workflow, execution.input, trigger=trigger, user=user, retry_of=execution)


def run_workflow(workflow: Workflow, run_input: Any = None, *, trigger: str = Trigger.MANUAL, user: Any = None) -> (
    WorkflowExecution
):
    """Run a saved workflow now and return its finished execution (the CLI, tests)."""
    return run_now(workflow, run_input, trigger=trigger, user=user).execution


def record_skipped(workflow: Workflow, tick: datetime) -> WorkflowExecution:
    """A schedule tick not run because the previous run is still going (``overlap: skip``)."""
    now = timezone.now()
    execution = _new(workflow, {"scheduledFor": tick.isoformat(), "firedAt": now.isoformat()},
                     trigger=Trigger.SCHEDULE, user=None, idempotency_key=None, retry_of=None,
                     status=Status.SKIPPED, scheduled_for=tick)
    execution.finished_at = now
    execution.error, execution.error_code = Code.RUN_SKIPPED.message, Code.RUN_SKIPPED.name
    insert(execution)
    return execution


def enqueue(execution: WorkflowExecution) -> None:
    """Queue a job for the execution; called inside the transaction that creates it, so the job
    exists exactly when the record does (Procrastinate writes through Django's connection)."""
    from keeperstate.executions.tasks import defer_run  # imports Procrastinate's app, ready only at run time

    defer_run(str(execution.id), execution.organization_id)


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
    config = trigger_config(nodes)
    return config is not None and config.get("triggerType") == "Schedule"


def uses_pins(trigger: str) -> bool:
    """Whether a run uses its nodes' pinned data: only a run a person started in the editor (the
    editor's Run and Retry are ``manual``; Test step uses them too). A scheduled, webhook, API or
    error-workflow run runs every node, whatever is pinned."""
    return trigger == Trigger.MANUAL


def _pins(execution: WorkflowExecution, workflow: Workflow) -> dict[str, dict[str, Any]] | None:
    return pinned_outputs(workflow.nodes) if uses_pins(execution.trigger) else None


# -- one node alone ----------------------------------------------------------------------------


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
    workflow) as its upstream outputs: references resolve as in that run. Nothing is recorded as
    an execution. A node that writes state runs only with ``allow_writes``, in the workflow's own
    scope (the state a run sees), in one transaction. Pinned data of the other nodes stands in for
    their outputs, as in a run from the editor; the tested node itself runs."""
    graph = Graph.parse(workflow.nodes, workflow.edges)
    if node_id not in graph.nodes:
        raise StepNodeNotFound(f"The saved workflow has no node '{node_id}'. Save the workflow first.", field="node")
    definition = get_action(graph.action_type(node_id) or "")
    if node_id == trigger_of(graph) or definition is None or definition.loop:
        raise StepNotRunnable(
            "Only an action node can be tested on its own: the trigger's output is the run input, and a "
            "For Each runs its body (test its body's nodes one by one).", field="node")
    if definition.writes_state and not allow_writes:
        raise StepWouldWrite(
            f"'{graph.labels()[node_id]}' writes to this workflow's state (the state its runs read). Send "
            "allowWrites: true to test it anyway.", field="allowWrites")
    results: dict[str, NodeResult] = {
        nid: result_from_json(value) for nid, value in (source.node_results if source else {}).items()
    }
    if source is not None:
        results[trigger_of(graph)] = Succeeded(source.input)
    else:
        results.setdefault(trigger_of(graph), Succeeded({}))
    for pinned_id, data in pinned_outputs(workflow.nodes).items():
        if pinned_id != node_id:
            results[pinned_id] = Succeeded(data, pinned=True)
    ctx = RunContext(organization_id=workflow.organization_id, workflow_id=workflow.id)
    result = _one_node(workflow.organization_id, graph, node_id, results, ctx, writes=definition.writes_state)
    handle = result.handle if isinstance(result, Succeeded) else None
    return StepResult(node_id=node_id, result=result.to_json(), handle=handle, wrote=definition.writes_state,
                      source=source)


def run_alone(organization_id: int, action_type: str, config: dict[str, Any], run_input: dict[str, Any]) -> (
    NodeResult
):
    """Run one action outside any workflow (direct node execution), ``run_input`` playing the
    trigger's output (``<<@trigger:Trigger.field>>``), counted against ``organization_id``'s runs
    per minute. State actions fail with STATE_NO_WORKFLOW_CONTEXT: state belongs to a workflow, and
    so do secrets. A config no workflow could store fails as the node, as a run would record it."""
    definition = get_action(action_type)
    if definition is None:
        raise UnknownAction(f"Unknown action type '{action_type}'. Pick an action from the palette.",
                            field="actionType")
    parsed, errors = parse_config(definition.config_fields, config)
    if errors:
        return Failed.of(errors[0])
    node = {"id": DIRECT_NODE_ID, "type": "action",
            "data": {"label": definition.label, "config": {**parsed, "actionType": action_type}}}
    trigger = {"id": DIRECT_TRIGGER_ID, "type": TRIGGER_TYPE, "data": {"label": DIRECT_TRIGGER_LABEL}}
    graph = Graph.parse([trigger, node], [{"id": "e1", "source": DIRECT_TRIGGER_ID, "target": DIRECT_NODE_ID}])
    results: dict[str, NodeResult] = {DIRECT_TRIGGER_ID: Succeeded(check_input(run_input))}
    return _one_node(organization_id, graph, DIRECT_NODE_ID, results, RunContext(), writes=False)


def _one_node(organization_id: int, graph: Graph, node_id: str, results: dict[str, NodeResult], ctx: RunContext,
              *, writes: bool) -> NodeResult:
    """The one way a node runs alone: counted as a run, then the runner's node step, a node that
    writes in one transaction of its own."""
    check_org_run_rate(organization_id)
    with one_key_transaction() if writes else transaction.atomic():
        return run_node(graph, node_id, results, graph.labels(), ctx)


# -- how a run is recorded -------------------------------------------------------------------------


def _new(workflow: Workflow, run_input: dict[str, Any], *, trigger: str, user: Any, idempotency_key: str | None,
         retry_of: WorkflowExecution | None, status: str, scheduled_for: datetime | None = None) -> (
    WorkflowExecution
):
    """A new execution of ``workflow``, not written yet: ``queued``, ``running`` (started now) or
    ``skipped``."""
    now = timezone.now()
    if trigger in (Trigger.MANUAL, Trigger.API):
        run_input = with_schedule_fields(workflow.nodes, run_input, now)
    execution = WorkflowExecution(
        workflow=workflow, organization_id=workflow.organization_id, status=status, trigger=trigger,
        input=run_input, idempotency_key=idempotency_key, triggered_by=user if getattr(user, "pk", None) else None,
        queued_at=now, scheduled_for=scheduled_for, retry_of=retry_of,
    )
    if status == Status.RUNNING:
        execution.started_at, execution.heartbeat_at = now, now
    return execution


def _recorded(execution: WorkflowExecution, workflow: Workflow, write: Callable[[], object]) -> (
    WorkflowExecution | None
):
    """Call ``write``, which writes the execution's record in a transaction of its own, and say
    why the database refused it: the workflow is gone (WorkflowDeletedDuringRun), or another
    request with the same Idempotency-Key won the race (its execution is returned)."""
    try:
        write()
    except IntegrityError as exc:
        if names_constraint(exc.__cause__, _WORKFLOW_FK):
            # The workflow left this organization (hard-deleted, or moved: keeperstate/workflows/move.py)
            # between reading it and writing its run.
            raise WorkflowDeletedDuringRun(
                "The workflow was deleted or moved to another organization while this run was being "
                "recorded, so nothing of it was kept. Look the workflow up again and run it there."
            ) from None
        earlier = by_idempotency_key(workflow, execution.idempotency_key) if execution.idempotency_key else None
        if earlier is None:
            raise
        return earlier
    return None


def _recorded_first(execution: WorkflowExecution, workflow: Workflow) -> Started:
    """Run a new execution with an egress node: its record committed ``running`` first, then
    node by node."""
    if (earlier := _recorded(execution, workflow, lambda: _insert(execution))) is not None:
        return Started(earlier, replayed=True)
    return _node_by_node(execution, workflow)


def _node_by_node(execution: WorkflowExecution, workflow: Workflow) -> Started:
    _NodeByNode(execution).run(workflow)
    return Started(execution)


def _in_one_commit(execution: WorkflowExecution, workflow: Workflow, *, beating: bool = False,
                   counts_run: bool = False) -> Started:
    """Run a new execution with no egress node in one transaction and return it finished: its
    record is written at its end, with its results, in the transaction of its state writes.
    ``beating``: a caller that stops waiting may write its record ``running`` meanwhile
    (run_waited), so the run keeps that record's heartbeat. ``counts_run``: the run counts against
    its organization's runs per minute here, the count sent with its transaction's first statement
    and read before its commit (count_run_ahead); a refused run is rolled back whole (429)."""
    connection_before = checked_connection()
    count = count_run_ahead(workflow.organization_id) if counts_run else None
    try:
        with heartbeating(execution) if beating else _nothing():
            one = lambda: _one_transaction(execution, workflow, count)  # noqa: E731
            if (earlier := _recorded(execution, workflow, one)) is not None:
                return Started(earlier, replayed=True)
    except _RunAgain:
        _unless_lost(connection_before)
        if count is not None:
            count.check()  # sent with the rolled-back transaction, committed on its own
        _reset(execution)
        if (earlier := _recorded(execution, workflow, lambda: _insert_once(execution))) is not None:
            return Started(earlier, replayed=True)
        _NodeByNode(execution).run(workflow)
    finally:
        if count is not None:
            count.withdraw()
    return Started(execution)


def _one_transaction(execution: WorkflowExecution, workflow: Workflow, count: RunCount | None = None) -> None:
    with whole_run_transaction():
        _run_and_end(execution, workflow, count)


def _run_and_end(execution: WorkflowExecution, workflow: Workflow, count: RunCount | None = None) -> None:
    """Inside the run's one transaction: run every node, then write the end of the run, whose
    answer comes with the COMMIT, one round trip for both (lifecycle.end): a refusal of it (the
    workflow gone before a new record) is raised by the commit, and read by the caller as it would
    be read from the insert (_recorded). Raises _RunAgain when a refused statement aborted the
    transaction (the caller's block rolls it back). With ``count``, the organization's count of the
    run, sent ahead of the transaction, is read before the end: past the limit, Throttled rolls
    the run back."""
    ctx = RunContext(organization_id=workflow.organization_id, workflow_id=workflow.id, execution_id=execution.id)
    outcome = RunOutcome()
    try:
        # A run that writes one key at most may take the store's fast usage check, as a node of a
        # run recorded first does (one_key_transaction).
        with at_most_one_key(writes_at_most_once(workflow.nodes)):
            run_graph(workflow.nodes, workflow.edges, execution.input, ctx, outcome=outcome,
                      pins=_pins(execution, workflow))
    except DatabaseError:
        raise _RunAgain from None  # a refusal runs again node by node; a lost database does not (_unless_lost)
    except Exception:
        # Not the database's: the writes so far and this record of them commit together.
        logger.exception("execution %s failed outside any action", execution.pk)
        outcome = _internal_error(outcome.results)
    if transaction_aborted():
        raise _RunAgain
    if count is not None:
        count.check()
    _end(execution, outcome, answer_with_commit=True)


def _unless_lost(connection_before: object) -> None:
    """A run's one transaction ended without its commit: a statement refused by a database that is
    still there, after which the run goes again node by node; or the database went away (its
    connection was lost and replaced), after which nothing is run again here: nothing of the run
    was kept, and the client's retry, the tick or the queue runs it."""
    if connection_broken() or current_connection() is not connection_before:
        raise OperationalError("The connection to the database was lost during the run; nothing of it was kept.")


def _copy(execution: WorkflowExecution) -> WorkflowExecution:
    """A new, unsaved instance with the execution's values, sharing nothing that changes."""
    fields = WorkflowExecution._meta.concrete_fields
    return WorkflowExecution(**{field.attname: copy.deepcopy(getattr(execution, field.attname)) for field in fields})


def _made_findable(execution: WorkflowExecution, future: Future[Started]) -> bool:
    """A waited run in one commit outlasted its caller's wait: write its record ``running``
    (committed on its own, its heartbeat kept by the run) so the caller's answer names an
    execution others can read; the run's end then moves it to its final status. False when the
    run ended at that instant (its own record came first), after waiting for it to return."""
    try:
        _insert(execution)
    except IntegrityError:
        try:
            future.exception(timeout=_ENDING_SECONDS)
        except FutureTimeout:
            pass
        return not future.done()
    return True


def _insert_once(execution: WorkflowExecution) -> None:
    """Write the record of a run going again node by node, unless a caller that stopped waiting
    wrote it already (see _made_findable)."""
    try:
        _insert(execution)
    except IntegrityError as exc:
        if not names_constraint(exc.__cause__, _PRIMARY_KEY):
            raise


class _NodeByNode:
    """A run recorded first (its execution is ``running`` and committed): each node that may
    change something commits with the record of its result, the last one with the run's end."""

    def __init__(self, execution: WorkflowExecution):
        self.execution = execution
        self.recorded: dict[str, NodeResult] = {}  # the results as last committed
        self.ended = False

    def progress(self, outcome: RunOutcome, final: bool) -> None:
        # Inside the node's transaction: the node's writes and this record commit together.
        self.recorded = dict(outcome.results)
        if final:
            _end(self.execution, outcome)
            self.ended = True
        else:
            record_progress(self.execution, outcome.results_json(), timezone.now())

    def run(self, workflow: Workflow) -> None:
        execution = self.execution
        ctx = RunContext(organization_id=workflow.organization_id, workflow_id=workflow.id, execution_id=execution.id)
        try:
            with heartbeating(execution):
                outcome = run_graph(
                    workflow.nodes, workflow.edges, execution.input, ctx,
                    # one node writes at most one key: the store may use its fast usage check
                    on_progress=self.progress, node_transaction=one_key_transaction,
                    pins=_pins(execution, workflow),
                )
        except (DatabaseError, WorkflowDeletedDuringRun) as exc:
            # DatabaseError: the record cannot be written now; the client's answer says so (503), and
            # housekeeping closes the execution as interrupted with the node results recorded so far.
            if availability.unavailable(exc):  # the outage's one line (keeperstate.ops.availability)
                availability.noticed(exc, f"execution {execution.pk}")
            else:
                logger.warning("execution %s could not be recorded to its end", execution.pk, exc_info=True)
            raise
        except Exception:
            logger.exception("execution %s failed outside any action", execution.pk)
            outcome = _internal_error(self.recorded)
            self.ended = False
        if not self.ended:
            with _alone():
                _end(execution, outcome)


def _end(execution: WorkflowExecution, outcome: RunOutcome, *, answer_with_commit: bool = False) -> None:
    execution.node_results = outcome.results_json()
    execution.status = Status.SUCCESS if outcome.ok else Status.ERROR
    execution.error, execution.error_code = outcome.error, outcome.error_code
    execution.finished_at = timezone.now()
    # From running, or from interrupted: a run housekeeping took for dead still gets its real
    # outcome (keeperstate.executions.lifecycle).
    try:
        end(execution, answer_with_commit=answer_with_commit)
    except IntegrityError as exc:
        if not names_constraint(exc.__cause__, _WORKFLOW_FK):
            raise
        raise WorkflowDeletedDuringRun(
            "The workflow was deleted while this run was in progress, and its executions and state went "
            "with it. Nothing more can be learned about this run."
        ) from None
    if execution.status == Status.ERROR:
        queue_error_run(execution)  # the workflow's settings.errorWorkflow, with the failure's record


def _reset(execution: WorkflowExecution) -> None:
    """The execution as it was before a run that was rolled back whole."""
    execution.status, execution.node_results = Status.RUNNING, {}
    execution.error = execution.error_code = execution.finished_at = None
    execution._state.adding = True


def _internal_error(results: dict[str, NodeResult]) -> RunOutcome:
    return _failed(
        Code.RUN_INTERNAL_ERROR,
        "The run stopped on an internal error, which was logged for the administrators. "
        "The node results show what ran before it.",
        results=dict(results),
    )


def _failed(error: Code, message: str, *, results: dict[str, NodeResult] | None = None) -> RunOutcome:
    return RunOutcome(results=results or {}, error=message, error_code=error.name)


def _insert(execution: WorkflowExecution) -> None:
    with _alone():
        insert(execution)


def _alone() -> Any:
    """For a statement the database may refuse: sent on its own (autocommit, one round trip), or
    in a savepoint when a caller's transaction is open (a test), so a refusal does not end it."""
    return transaction.atomic() if transaction.get_connection().in_atomic_block else _nothing()


class _nothing:  # noqa: N801 - a context manager; costs less than contextlib.nullcontext per run
    def __enter__(self) -> None:
        return None

    def __exit__(self, *exc: object) -> None:
        return None


def _earlier(workflow: Workflow, idempotency_key: str | None) -> WorkflowExecution | None:
    return by_idempotency_key(workflow, idempotency_key) if idempotency_key is not None else None
