from keeperstate.models.org import Membership, Organization
from keeperstate.models.seeding import DemoSeed
from keeperstate.models.state import WorkflowState, WorkflowStateEvent, WorkflowStateTombstone
from keeperstate.models.workflow import Workflow, WorkflowExecution

__all__ = [
    "DemoSeed",
    "Membership",
    "Organization",
    "Workflow",
    "WorkflowExecution",
    "WorkflowState",
    "WorkflowStateEvent",
    "WorkflowStateTombstone",
]
