"""The demo organization, user and "Block monitor" workflow that `manage.py serve` creates.

``block_monitor_graph`` is the reference monitor driven by its input (``{"block": 100}``), used by
the README's API session and the tests; the demo organization gets ``live_block_monitor_graph``,
which fetches the demo's own block feed and posts alerts (keeperstate.demo_feed)."""

from __future__ import annotations

import secrets
from typing import Any

from django.contrib.auth import get_user_model
from django.db import transaction

from keeperstate.demo_feed import ALERTS_SECRET
from keeperstate.models import Membership, Organization, OrganizationSecret, Workflow
from keeperstate.secrets.store import secret_put

DEMO_USERNAME = "demo"
DEMO_PASSWORD = "keeperstate-demo"  # noqa: S105 - printed for the local embedded database only
MONITOR_NAME = "Block monitor"
MONITOR_DESCRIPTION = "Watches the demo block feed, remembers the last block seen and alerts once per new block."


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


FEED_PATH = "/demo/feed/"
ALERTS_PATH = "/demo/alerts/"
DEFAULT_BASE_URL = "http://127.0.0.1:8000"


def live_block_monitor_graph(base_url: str = DEFAULT_BASE_URL) -> tuple[list[dict[str, Any]], list[dict[str, Any]]]:
    """The demo organization's monitor: fetch the demo feed's latest block with HTTP Request,
    keep the cursor with compare-and-set, and post one alert per new block.

    Trigger → Fetch block → State Get cursor → New block? → State Set cursor (CAS) → Send alert.
    The alert follows the write, so of two runs that see the same new block only the one whose
    compare-and-set won alerts. ``base_url`` is where the site itself is served (``serve``
    passes its own address and allows it in KEEPERSTATE_HTTP_ALLOW).
    """
    base = base_url.rstrip("/")
    fetched = "<<@fetch-block:Fetch block.body.block>>"

    def action(node_id: str, label: str, y: int, config: dict[str, Any]) -> dict[str, Any]:
        return {"id": node_id, "type": "action", "position": {"x": 0, "y": y},
                "data": {"label": label, "type": "action", "config": config}}

    nodes = [
        {"id": "trigger", "type": "trigger", "position": {"x": 0, "y": 0},
         "data": {"label": "Trigger", "type": "trigger", "config": {"triggerType": "Manual", "sampleInput": {}}}},
        action("fetch-block", "Fetch block", 150,
               {"actionType": "HTTP Request", "method": "GET", "url": base + FEED_PATH, "responseType": "json"}),
        action("state-get-1", "State Get", 320, {"actionType": "State Get", "key": "cursor"}),
        action("condition-1", "New block?", 460,
               {"actionType": "Condition",
                "condition": f"not <<@state-get-1:State Get.exists>> or {fetched} > <<@state-get-1:State Get.value>>"}),
        action("state-set-1", "State Set", 610,
               {"actionType": "State Set", "key": "cursor", "value": fetched,
                "expectedVersion": "<<@state-get-1:State Get.version>>"}),
        action("send-alert", "Send alert", 750,
               {"actionType": "HTTP Request", "method": "POST", "url": base + ALERTS_PATH,
                "headers": {"Authorization": f"Bearer <<@__secrets:Secrets.{ALERTS_SECRET}>>"},
                "body": f'{{"block": {fetched}, "previous": <<@state-get-1:State Get.value>>, '
                        '"cursorVersion": <<@state-set-1:State Set.version>>}'}),
    ]
    edges = [
        {"id": "e1", "source": "trigger", "target": "fetch-block"},
        {"id": "e2", "source": "fetch-block", "target": "state-get-1"},
        {"id": "e3", "source": "state-get-1", "target": "condition-1"},
        {"id": "e4", "source": "condition-1", "target": "state-set-1", "sourceHandle": "true"},
        {"id": "e5", "source": "state-set-1", "target": "send-alert"},
    ]
    return nodes, edges


def _point_at(nodes: list[Any], base_url: str) -> list[Any] | None:
    """The nodes with their demo URLs moved to ``base_url``, or None when nothing changes (the
    site is served elsewhere than when the demo was seeded)."""
    changed = False
    out = []
    for node in nodes:
        config = node.get("data", {}).get("config", {}) if isinstance(node, dict) else {}
        url = config.get("url") if isinstance(config, dict) else None
        for path in (FEED_PATH, ALERTS_PATH):
            if isinstance(url, str) and url.endswith(path) and url != base_url.rstrip("/") + path:
                node = {**node, "data": {**node["data"], "config": {**config, "url": base_url.rstrip("/") + path}}}
                changed = True
        out.append(node)
    return out if changed else None


@transaction.atomic
def ensure_demo(
    *, password: str | None = DEMO_PASSWORD, base_url: str = DEFAULT_BASE_URL
) -> tuple[Organization, Any, Workflow]:
    """Create the demo organization, user, alerts secret and workflow if missing; idempotent.
    An existing demo monitor is pointed at ``base_url``; one still holding the old input-driven
    graph, untouched, becomes the live one."""
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
    if not OrganizationSecret.objects.filter(organization=org, name=ALERTS_SECRET).exists():
        secret_put(organization=org, name=ALERTS_SECRET, value=secrets.token_urlsafe(24))
    workflow = Workflow.objects.alive().filter(organization=org, name=MONITOR_NAME).first()
    if workflow is None:
        nodes, edges = live_block_monitor_graph(base_url)
        workflow = Workflow.objects.create(
            organization=org,
            name=MONITOR_NAME,
            description=MONITOR_DESCRIPTION,
            nodes=nodes,
            edges=edges,
            created_by=user,
        )
    elif (workflow.nodes, workflow.edges) == tuple(block_monitor_graph()):
        workflow.nodes, workflow.edges = live_block_monitor_graph(base_url)
        workflow.description = MONITOR_DESCRIPTION
        workflow.save(update_fields=["nodes", "edges", "description", "updated_at"])
    elif (moved := _point_at(workflow.nodes, base_url)) is not None:
        workflow.nodes = moved
        workflow.save(update_fields=["nodes", "updated_at"])
    return org, user, workflow
