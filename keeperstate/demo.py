"""The demo organization, user and workflows that `manage.py serve` creates, each once.

Every piece (the organization, the user, each demo workflow) is created at most once per
database: a ``DemoSeed`` row records it, so a person's changes stick. A renamed or deleted demo
workflow is not recreated, the demo user's password is set only when the user is created, and
a demo workflow added to ``DEMO_WORKFLOWS`` in a later release appears on the next start.
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass, field
from typing import Any

from django.contrib.auth import get_user_model
from django.db import connection, transaction

from keeperstate.models import DemoSeed, Membership, Organization, Workflow
from keeperstate.workflows import workflow_create, workflow_update

DEMO_USERNAME = "demo"
DEMO_PASSWORD = "keeperstate-demo"  # noqa: S105 - printed for the local embedded database only
DEMO_ORG_SLUG = "demo"
MONITOR_NAME = "Block monitor"

Graph = tuple[list[dict[str, Any]], list[dict[str, Any]]]


def block_monitor_graph() -> Graph:
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


def heartbeat_graph() -> Graph:
    """Schedule (every 15 s) → State Increment beats → State Set lastBeat: runs by itself."""
    nodes = [
        {
            "id": "trigger",
            "type": "trigger",
            "position": {"x": 0, "y": 0},
            "data": {"label": "Every 15 s", "type": "trigger",
                     "config": {"triggerType": "Schedule", "interval": 15, "overlap": "skip"}},
        },
        {
            "id": "count-1",
            "type": "action",
            "position": {"x": 0, "y": 120},
            "data": {"label": "Count beats", "type": "action",
                     "config": {"actionType": "State Increment", "key": "beats"}},
        },
        {
            "id": "state-set-1",
            "type": "action",
            "position": {"x": 0, "y": 240},
            "data": {"label": "Remember the tick", "type": "action",
                     "config": {"actionType": "State Set", "key": "lastBeat",
                                "value": "<<@trigger:Every 15 s.scheduledFor>>"}},
        },
    ]
    edges = [
        {"id": "e1", "source": "trigger", "target": "count-1"},
        {"id": "e2", "source": "count-1", "target": "state-set-1"},
    ]
    return nodes, edges


@dataclass(frozen=True)
class DemoWorkflow:
    """A workflow the demo organization starts with.

    ``key`` names it for good (its seed marker), so never change a key once released; ``name``
    may change freely. ``changes`` go through ``workflow_update`` after creation (for example
    ``{"active": True}`` for a scheduled demo), so the demo is made by the same services as any
    workflow.
    """

    key: str
    name: str
    description: str
    graph: Callable[[], Graph]
    changes: dict[str, Any] = field(default_factory=dict)


# Add demo workflows here; each is created once, in this order.
DEMO_WORKFLOWS: list[DemoWorkflow] = [
    DemoWorkflow(
        key="block-monitor",
        name=MONITOR_NAME,
        description="Remembers the last block seen and acts only on new blocks.",
        graph=block_monitor_graph,
    ),
    DemoWorkflow(
        key="heartbeat",
        name="Heartbeat",
        description="Runs by itself every 15 seconds (a Schedule trigger, active): counts its beats and "
        "remembers the last tick. Watch the runs arrive in the editor.",
        graph=heartbeat_graph,
        changes={"active": True},
    ),
]


@dataclass
class SeededDemo:
    """What the database holds of the demo after seeding (None: a person deleted it)."""

    organization: Organization | None
    user: Any
    user_created: bool
    workflows: dict[str, Workflow | None]
    created: list[str]  # seed keys created by this call

    @property
    def monitor(self) -> Workflow | None:
        return self.workflows.get("block-monitor")


def seed_demo(*, password: str | None = DEMO_PASSWORD, workflows: list[DemoWorkflow] | None = None) -> SeededDemo:
    """Create whatever part of the demo was never created; touch nothing that was.

    ``password`` is the new demo user's password (None: an unusable one, so it cannot log in
    until someone sets one). Safe from several processes at once: one transaction under an
    advisory lock, so two starts cannot both create the same piece.
    """
    with transaction.atomic():
        with connection.cursor() as cursor:
            cursor.execute("SELECT pg_advisory_xact_lock(hashtext('keeperstate.demo_seed'))")
        done = dict(DemoSeed.objects.values_list("key", "workflow_id"))
        created: list[str] = []

        org = Organization.objects.filter(slug=DEMO_ORG_SLUG).first()
        if "organization" not in done:
            if org is None:
                org = Organization.objects.create(slug=DEMO_ORG_SLUG, name="Demo organization")
            created.append("organization")

        user_model = get_user_model()
        user = user_model.objects.filter(username=DEMO_USERNAME).first()
        user_created = False
        if "user" not in done:
            if user is None:
                user = user_model(username=DEMO_USERNAME, is_staff=True, is_superuser=True)
                if password is None:
                    user.set_unusable_password()
                else:
                    user.set_password(password)
                user.save()
                user_created = True
            created.append("user")
        if user is not None and org is not None and {"organization", "user"} & set(created):
            Membership.objects.get_or_create(user=user, organization=org, defaults={"role": Membership.Role.OWNER})

        found: dict[str, Workflow | None] = {}
        for demo in DEMO_WORKFLOWS if workflows is None else workflows:
            if demo.key in done:
                marked = done[demo.key]
                found[demo.key] = Workflow.objects.alive().filter(pk=marked).first() if marked else None
                continue
            if org is None:  # the demo organization was deleted: nowhere to put it
                found[demo.key] = None
                continue
            # A database seeded before markers existed already has it under its name: adopt it.
            workflow = Workflow.objects.alive().filter(organization=org, name=demo.name).first()
            if workflow is None:
                nodes, edges = demo.graph()
                workflow = workflow_create(
                    organization=org, user=user, name=demo.name, description=demo.description, nodes=nodes, edges=edges
                )
                if demo.changes:
                    workflow = workflow_update(workflow, **demo.changes)
            done[demo.key] = workflow.pk
            found[demo.key] = workflow
            created.append(demo.key)

        DemoSeed.objects.bulk_create([DemoSeed(key=key, workflow_id=done.get(key)) for key in created])
    return SeededDemo(organization=org, user=user, user_created=user_created, workflows=found, created=created)


def ensure_demo(*, password: str | None = DEMO_PASSWORD) -> tuple[Organization | None, Any, Workflow | None]:
    """``seed_demo`` as (organization, user, Block monitor), for callers that want those three."""
    demo = seed_demo(password=password)
    return demo.organization, demo.user, demo.monitor
