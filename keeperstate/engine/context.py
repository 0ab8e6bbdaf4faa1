"""What a running node knows about its run: whose workflow it is and which execution."""

from __future__ import annotations

import uuid
from dataclasses import dataclass, field

from keeperstate.secrets.vault import SecretVault
from keeperstate.state.errors import StateNoWorkflowContext
from keeperstate.state.store import StateScope


@dataclass(frozen=True)
class RunContext:
    organization_id: int | None = None
    workflow_id: uuid.UUID | None = None
    execution_id: uuid.UUID | None = None
    # The node being run (the runner sets it per node): what a log line of an action names.
    node_id: str | None = None
    # The run's view of its organization's secrets; one per run, so what it redacts accumulates.
    secrets: SecretVault = field(default=None, compare=False, repr=False)  # type: ignore[assignment]

    def __post_init__(self) -> None:
        if self.secrets is None:
            object.__setattr__(self, "secrets", SecretVault(self.organization_id))

    def where(self) -> str:
        """The run and node an action's log line is about: ``workflow <id> node <id> run <id>``."""
        parts = [("workflow", self.workflow_id), ("node", self.node_id), ("run", self.execution_id)]
        return " ".join(f"{name} {value}" for name, value in parts if value is not None) or "no workflow"

    def state_scope(self) -> StateScope:
        """The state scope of this run; only a workflow run has one."""
        if self.organization_id is None or self.workflow_id is None:
            raise StateNoWorkflowContext(
                "State actions keep state per workflow, and this action is running outside a workflow "
                "(a direct node execution). Add it to a workflow and run the workflow."
            )
        return StateScope(
            organization_id=self.organization_id, workflow_id=self.workflow_id, execution_id=self.execution_id
        )
