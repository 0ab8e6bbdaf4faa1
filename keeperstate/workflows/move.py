"""A workflow moved to another organization: copy then delete, in one transaction (ADR 0059).

Every row of a workflow carries its organization, which leads its keys, and no row ever changes
it (the tables shard by it, docs/scaling.md; ``KeepsOrganization`` refuses it on save). So a move
inserts the workflow and everything keyed by it again under the target organization, with the
same ids, and then deletes the workflow in the old one, whose foreign keys cascade to the rest:

* the workflow row itself (its id stays: webhooks ``/hooks/<id>/``, API and editor URLs and the
  webhook secret keep working; the keys are ``(organization_id, id)``, so both rows exist for the
  length of the transaction, and no one else ever sees two);
* its state, tombstones, history and due marks (keeperstate/state/moving.py: value, version and
  expiry as they were, history unchanged, usage counted once in each organization);
* its executions with their node results, and its saved versions (``WorkflowVersion``).

Refusals, each with its code and nothing written: the same organization, a user who is not an
owner or admin of both (superusers may), a run queued or running (it would write to the old
organization's rows), a target whose state budget cannot take the state. Writers that race the
move wait for its locks and then find the workflow gone from the old organization: a state write
fails with STATE_STORAGE_ERROR, never silently lost.
"""

from __future__ import annotations

from typing import Any

from django.conf import settings
from django.db import connection, transaction

from keeperstate.accounts.access import administered_organizations
from keeperstate.accounts.models import Organization
from keeperstate.audit.log import audit
from keeperstate.core.errors import Code, CodedError
from keeperstate.executions.models import WorkflowExecution
from keeperstate.state.moving import Moving, TargetUsage, copy_rows_sql, copy_state, lock_state, target_usage
from keeperstate.workflows.models import Workflow, WorkflowVersion

# The workflow row, locked for the move: a new execution or a new state key of it (their foreign
# keys take KEY SHARE on it) waits, then fails on the missing row; a save of it waits.
LOCK_WORKFLOW_SQL = "SELECT 1 FROM workflow WHERE organization_id = %(src)s AND id = %(wf)s FOR UPDATE"
UNFINISHED_RUNS_SQL = (
    "SELECT count(*) FROM workflow_execution WHERE organization_id = %(src)s AND workflow_id = %(wf)s "
    "AND status IN ('queued', 'running')"
)
# Raw SQL, not Django's delete(): Django would delete the state rows itself while the workflow
# still exists, and the history trigger would then write a tombstone and an event for each.
DELETE_WORKFLOW_SQL = "DELETE FROM workflow WHERE organization_id = %(src)s AND id = %(wf)s"


class MoveRefused(CodedError):
    """A move that was not made (its subclass's code says why); nothing was written."""


class MoveSameOrganization(MoveRefused):
    error = Code.MOVE_SAME_ORGANIZATION


class MoveNotPermitted(MoveRefused):
    error = Code.MOVE_NOT_PERMITTED


class MoveRunInProgress(MoveRefused):
    error = Code.MOVE_RUN_IN_PROGRESS


class MoveOverBudget(MoveRefused):
    error = Code.MOVE_OVER_BUDGET


class MoveSourceGone(MoveRefused):
    error = Code.NOT_FOUND


def may_move(user: Any, source: int, target: int) -> bool:
    """Superusers, and owners or admins of both organizations."""
    if getattr(user, "is_superuser", False) and getattr(user, "is_active", False):
        return True
    return administered_organizations(user).filter(pk__in=[source, target]).distinct().count() == 2


def move_workflow(workflow: Workflow, to_organization: Organization, *, by_user: Any) -> Workflow:
    """Move ``workflow`` with everything of it to ``to_organization``; the moved workflow back
    (same id). Raises MoveRefused with its code; a refusal or failure leaves everything as it was."""
    src, dst, wf = workflow.organization_id, to_organization.pk, workflow.pk
    if src == dst:
        raise MoveSameOrganization(
            f"'{workflow.name}' is already in {to_organization}; pick another organization to move it to.",
        )
    if not may_move(by_user, src, dst):
        raise MoveNotPermitted(
            f"Moving '{workflow.name}' to {to_organization} takes an owner or admin of both organizations; "
            "ask one of them to move it.",
        )
    params: dict[str, Any] = {"src": src, "dst": dst, "wf": wf}
    with transaction.atomic(), connection.cursor() as cursor:
        cursor.execute(LOCK_WORKFLOW_SQL, params)
        if cursor.fetchone() is None:
            raise MoveSourceGone(
                f"'{workflow.name}' is no longer in organization {src} (moved or deleted meanwhile); reload it.",
            )
        cursor.execute(UNFINISHED_RUNS_SQL, params)
        runs = cursor.fetchone()[0]
        if runs:
            raise MoveRunInProgress(
                f"{runs} run(s) of '{workflow.name}' are queued or running and would write to the old "
                "organization. Deactivate the workflow, let the runs end, then move it again.",
                details={"runs": runs},
            )
        moving = lock_state(cursor, src=src, wf=wf)
        usage = target_usage(cursor, dst=dst, moving=moving)
        over = usage.passes(moving)
        if over is not None:
            raise _over_budget(workflow, to_organization, over, usage, moving)

        cursor.execute(copy_rows_sql(Workflow, workflow_column="id"), params)
        copy_state(cursor, src=src, dst=dst, wf=wf)
        cursor.execute(copy_rows_sql(WorkflowExecution), params)
        cursor.execute(copy_rows_sql(WorkflowVersion), params)
        cursor.execute(DELETE_WORKFLOW_SQL, params)

        details = {"from": src, "to": dst, "state_keys": moving.keys}
        moved = Workflow.objects.get(organization_id=dst, pk=wf)
        audit("workflow.move", organization=src, target=moved, actor=by_user, details=details)
        audit("workflow.move", organization=dst, target=moved, actor=by_user, details=details)
    return moved


def _over_budget(workflow: Workflow, to: Organization, over: str, usage: TargetUsage, moving: Moving) -> MoveOverBudget:
    if over == "keys":
        limit, used, adds = settings.KEEPERSTATE_ORG_MAX_KEYS, usage.keys, moving.keys
        what = "state keys"
    else:
        limit, used, adds = settings.KEEPERSTATE_ORG_MAX_BYTES, usage.bytes, moving.bytes
        what = "bytes of state"
    return MoveOverBudget(
        f"{to} holds {used} {what} and '{workflow.name}' brings {adds}, over its budget of {limit}. "
        f"Delete keys in {to} or in the workflow, or raise the budget, then move it again.",
        details={"limit": over, "max": limit, "used": used, "moving": adds},
    )
