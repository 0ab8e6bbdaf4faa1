"""A workflow's settings: what it does beside its graph, stored in ``Workflow.settings``.

One setting so far, ``errorWorkflow``: the id of another workflow of the same organization, run
with the failed execution's summary when a run of this one ends in ``error``
(keeperstate.executions.error_runs). Every way in (the API, the editor, MCP) saves settings
through ``clean_settings``.
"""

from __future__ import annotations

import uuid
from typing import Any

from keeperstate.core.errors import Code, CodedError
from keeperstate.workflows.models import Workflow

ERROR_WORKFLOW = "errorWorkflow"
KNOWN_SETTINGS = (ERROR_WORKFLOW,)


class SettingsInvalid(CodedError):
    error = Code.SETTINGS_INVALID


class ErrorWorkflowInvalid(CodedError):
    error = Code.ERROR_WORKFLOW_INVALID


def clean_settings(settings: Any, *, organization_id: int, workflow_id: uuid.UUID | None) -> dict[str, Any]:
    """The settings as stored: known keys only, an error workflow checked to be another live
    workflow of ``organization_id`` (an unknown id and another organization's read alike, so ids
    cannot be probed). ``null`` or an empty text clears a setting."""
    if not isinstance(settings, dict):
        raise SettingsInvalid(field="settings")
    unknown = sorted(set(settings) - set(KNOWN_SETTINGS))
    if unknown:
        raise SettingsInvalid(
            f"Unknown setting {unknown[0]!r}; a workflow's settings are: {', '.join(KNOWN_SETTINGS)}.",
            field=f"settings.{unknown[0]}",
        )
    cleaned: dict[str, Any] = {}
    chosen = settings.get(ERROR_WORKFLOW)
    if chosen not in (None, ""):
        cleaned[ERROR_WORKFLOW] = str(_error_workflow(chosen, organization_id, workflow_id))
    return cleaned


def _error_workflow(chosen: Any, organization_id: int, workflow_id: uuid.UUID | None) -> uuid.UUID:
    field = f"settings.{ERROR_WORKFLOW}"
    try:
        target = uuid.UUID(chosen) if isinstance(chosen, str) else None
    except ValueError:
        target = None
    if target is None:
        raise ErrorWorkflowInvalid(f"The error workflow is a workflow id (a UUID), not {chosen!r}.", field=field)
    if target == workflow_id:
        raise ErrorWorkflowInvalid(
            "A workflow cannot be its own error workflow; pick another workflow, such as one that sends an alert.",
            field=field,
        )
    if not Workflow.objects.alive().filter(organization_id=organization_id, pk=target).exists():
        raise ErrorWorkflowInvalid(
            f"No workflow {target} in this workflow's organization; pick one of its workflows.", field=field
        )
    return target


def error_workflow_of(workflow: Workflow) -> Workflow | None:
    """The live workflow of the same organization that runs when ``workflow``'s run fails, if any
    (one deleted or moved away since it was chosen runs no more)."""
    chosen = workflow.settings.get(ERROR_WORKFLOW) if isinstance(workflow.settings, dict) else None
    if not chosen:
        return None
    return Workflow.objects.alive().filter(organization_id=workflow.organization_id, pk=chosen).first()
