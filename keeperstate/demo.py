"""The demo organization, user and "Block monitor" workflow that `manage.py serve` creates."""

from __future__ import annotations

from typing import Any

from django.contrib.auth import get_user_model
from django.db import transaction

from keeperstate.models import Membership, Organization, Workflow

DEMO_USERNAME = "demo"
DEMO_PASSWORD = "keeperstate-demo"  # noqa: S105 - printed for the local embedded database only
MONITOR_NAME = "Block monitor"


def block_monitor_graph() -> tuple[list[dict[str, Any]], list[dict[str, Any]]]:
    """Trigger → State Get cursor → Condition (new block?) → State Set cursor with CAS."""
    nodes = [
        {
            "id": "trigger",
            "type": "trigger",
            "position": {"x": 0, "y": 0},
            "data": {"label": "Trigger", "type": "trigger",
                     "config": {"triggerType": "Manual", "sampleInput": {"block": 100}}},
        },
        {
            "id": "state-get-1",
            "type": "action",
            "position": {"x": 0, "y": 120},
            "data": {"label": "State Get", "type": "action", "config": {"actionType": "State Get", "key": "cursor"}},
        },
        {
            "id": "condition-1",
            "type": "action",
            "position": {"x": 0, "y": 240},
            "data": {
                "label": "New block?",
                "type": "action",
                "config": {
                    "actionType": "Condition",
                    "condition": "not <<@state-get-1:State Get.exists>> "
                    "or <<@trigger:Trigger.block>> > <<@state-get-1:State Get.value>>",
                },
            },
        },
        {
            "id": "state-set-1",
            "type": "action",
            "position": {"x": 0, "y": 360},
            "data": {
                "label": "State Set",
                "type": "action",
                "config": {
                    "actionType": "State Set",
                    "key": "cursor",
                    "value": "<<@trigger:Trigger.block>>",
                    "expectedVersion": "<<@state-get-1:State Get.version>>",
                },
            },
        },
    ]
    edges = [
        {"id": "e1", "source": "trigger", "target": "state-get-1"},
        {"id": "e2", "source": "state-get-1", "target": "condition-1"},
        {"id": "e3", "source": "condition-1", "target": "state-set-1", "sourceHandle": "true"},
    ]
    return nodes, edges


@transaction.atomic
def ensure_demo(*, password: str | None = DEMO_PASSWORD) -> tuple[Organization, Any, Workflow]:
    """Create the demo organization, user and workflow if missing; idempotent."""
    org, _ = Organization.objects.get_or_create(slug="demo", defaults={"name": "Demo organization"})
    user_model = get_user_model()
    user, created = user_model.objects.get_or_create(username=DEMO_USERNAME)
    if created or password is not None:
        if password is None:
            user.set_unusable_password()
        else:
            user.set_password(password)
        user.is_staff = True
        user.is_superuser = True
        user.save()
    Membership.objects.get_or_create(user=user, organization=org, defaults={"role": Membership.Role.OWNER})
    workflow = Workflow.objects.alive().filter(organization=org, name=MONITOR_NAME).first()
    if workflow is None:
        nodes, edges = block_monitor_graph()
        workflow = Workflow.objects.create(
            organization=org,
            name=MONITOR_NAME,
            description="Remembers the last block seen and acts only on new blocks.",
            nodes=nodes,
            edges=edges,
            created_by=user,
        )
    return org, user, workflow
