from keeperstate.models.audit import AuditEvent
from keeperstate.models.demo import DemoAlert
from keeperstate.models.org import Membership, Organization
from keeperstate.models.ratelimit import RateCounter
from keeperstate.models.secret import OrganizationSecret
from keeperstate.models.seeding import DemoSeed
from keeperstate.models.state import (
    OrganizationStateUsage,
    StateHistoryDue,
    StateSetting,
    WorkflowState,
    WorkflowStateEvent,
    WorkflowStateTombstone,
    WorkflowStateUsage,
)
from keeperstate.models.tokens import ApiToken
from keeperstate.models.workflow import Workflow, WorkflowExecution

__all__ = [
    "ApiToken",
    "AuditEvent",
    "DemoAlert",
    "DemoSeed",
    "RateCounter",
    "Membership",
    "Organization",
    "OrganizationSecret",
    "OrganizationStateUsage",
    "StateSetting",
    "Workflow",
    "WorkflowExecution",
    "WorkflowState",
    "WorkflowStateEvent",
    "StateHistoryDue",
    "WorkflowStateTombstone",
    "WorkflowStateUsage",
]
