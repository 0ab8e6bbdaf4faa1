from keeperstate.models.audit import AuditEvent
from keeperstate.models.org import Membership, Organization
from keeperstate.models.ratelimit import RateCounter
from keeperstate.models.seeding import DemoSeed
from keeperstate.models.state import WorkflowState, WorkflowStateEvent, WorkflowStateTombstone
from keeperstate.models.tokens import ApiToken
from keeperstate.models.workflow import Workflow, WorkflowExecution

__all__ = [
    "ApiToken",
    "AuditEvent",
    "DemoSeed",
    "RateCounter",
    "Membership",
    "Organization",
    "Workflow",
    "WorkflowExecution",
    "WorkflowState",
    "WorkflowStateEvent",
    "WorkflowStateTombstone",
]
