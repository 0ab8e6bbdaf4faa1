"""An execution's status and the moves between statuses: one table, one way to move.

    queued ──▶ running ──▶ success | error | interrupted
                              interrupted ──▶ success | error
    skipped (a schedule tick not run): created so, never moves

A move is one conditional UPDATE (``status IN`` the statuses it may come from), so two processes
racing to move the same execution cannot both win: only the worker that moves an execution from
queued to running runs it. The one move back out of a final-looking status is deliberate: a run
that housekeeping took for dead (its heartbeat was late) but that was only slow still records its
real outcome when it finishes; it was never replayed.
"""

from __future__ import annotations

from typing import Any

from keeperstate.executions.models import WorkflowExecution

Status = WorkflowExecution.Status

MOVES: dict[str, frozenset[str]] = {
    Status.QUEUED: frozenset({Status.RUNNING}),
    Status.RUNNING: frozenset({Status.SUCCESS, Status.ERROR, Status.INTERRUPTED}),
    Status.INTERRUPTED: frozenset({Status.SUCCESS, Status.ERROR}),
    Status.SUCCESS: frozenset(),
    Status.ERROR: frozenset(),
    Status.SKIPPED: frozenset(),
}
# What a new execution may start as: queued (a worker runs it), running (run now), skipped.
INITIAL = frozenset({Status.QUEUED, Status.RUNNING, Status.SKIPPED})


def sources(to: str) -> list[str]:
    """The statuses an execution may move to ``to`` from."""
    return [status for status, targets in MOVES.items() if to in targets]


def transition(executions: Any, to: str, **fields: Any) -> int:
    """Move the executions of a queryset that may move to ``to`` (MOVES), setting ``fields`` in
    the same UPDATE; the number moved. The others are left as they are."""
    return executions.filter(status__in=sources(to)).update(status=to, **fields)
