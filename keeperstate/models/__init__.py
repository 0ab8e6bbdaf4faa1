from keeperstate.models.org import Membership, Organization
from keeperstate.models.seeding import DemoSeed
from keeperstate.models.state import (
    OrganizationStateUsage,
    StateSetting,
    WorkflowState,
    WorkflowStateEvent,
    WorkflowStateTombstone,
    WorkflowStateUsage,
)
from keeperstate.models.workflow import Workflow, WorkflowExecution

__all__ = [
    "DemoSeed",
    "Membership",
    "Organization",
    "OrganizationStateUsage",
    "StateSetting",
    "Workflow",
    "WorkflowExecution",
    "WorkflowState",
    "WorkflowStateEvent",
    "WorkflowStateTombstone",
    "WorkflowStateUsage",
]
