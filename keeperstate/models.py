"""KeeperState's model registry: Django loads an app's models from its ``models`` module, and the
models of this app live in the domain packages that own them. Code imports a model from its
domain (``keeperstate.state.models``); this module exists so the app registry finds them all."""

from keeperstate.accounts.models import ApiToken, Membership, Organization
from keeperstate.audit.models import AuditEvent
from keeperstate.executions.models import WorkflowExecution
from keeperstate.ratelimits.models import RateCounter
from keeperstate.secrets.models import OrganizationSecret
from keeperstate.state.models import (
    OrganizationStateUsage,
    StateHistoryDue,
    StateSetting,
    WorkflowState,
    WorkflowStateEvent,
    WorkflowStateTombstone,
    WorkflowStateUsage,
)
from keeperstate.workflows.models import Workflow, WorkflowVersion

__all__ = [
    "ApiToken",
    "AuditEvent",
    "Membership",
    "Organization",
    "OrganizationSecret",
    "OrganizationStateUsage",
    "RateCounter",
    "StateHistoryDue",
    "StateSetting",
    "Workflow",
    "WorkflowExecution",
    "WorkflowState",
    "WorkflowStateEvent",
    "WorkflowStateTombstone",
    "WorkflowStateUsage",
    "WorkflowVersion",
]
