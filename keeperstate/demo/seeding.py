"""The demo organization, user and workflows that `manage.py serve` creates, each once.

Every piece (the organization, the user, each demo workflow) is created at most once per
database: a ``DemoSeed`` row records it, so a person's changes stick. A renamed or deleted demo
workflow is not recreated, the demo user's password is set only when the user is created, and
a demo workflow added to ``DEMO_WORKFLOWS`` in a later release appears on the next start. The
graphs themselves are in keeperstate.demo.graphs.
"""

from __future__ import annotations

import secrets
from collections.abc import Callable
from dataclasses import dataclass, field
from typing import Any

from django.contrib.auth import get_user_model
from django.contrib.auth.hashers import check_password
from django.db import connection, transaction

from keeperstate.accounts.models import Membership, Organization
from keeperstate.demo.graphs import (
    ALERTS_PATH,
    ALERTS_SECRET,
    DEFAULT_BASE_URL,
    FEED_PATH,
    RPC_PATH,
    heartbeat_graph,
    legacy_live_block_monitor_graph,
    live_block_monitor_graph,
    live_reorg_safe_monitor_graph,
)
from keeperstate.demo.models import DemoSeed
from keeperstate.secrets.models import OrganizationSecret
from keeperstate.secrets.store import secret_put
from keeperstate.workflows.examples import Graph, block_monitor_graph
from keeperstate.workflows.models import Workflow
from keeperstate.workflows.services import workflow_create, workflow_update

DEMO_USERNAME = "demo"
DEMO_PASSWORD = "keeperstate-demo"  # noqa: S105 - printed for the local embedded database only
DEMO_ORG_SLUG = "demo"
MONITOR_NAME = "Block monitor"
MONITOR_DESCRIPTION = (
    "Every 10 s (a Schedule trigger, active) reads the demo chain's head over JSON-RPC and alerts every "
    "block since the last one it saw, once each, moving its cursor block by block."
)
REORG_SAFE_NAME = "Reorg-safe monitor"
REORG_SAFE_DESCRIPTION = (
    "Every 10 s alerts every block of the demo chain once, in order, and stays exact when the chain "
    "reorganises (every minute here): its cursor keeps the last blocks' hashes, a replaced block is named "
    "in one reorg alert and its replacement alerted; a reorganisation deeper than maxReorgDepth fails the "
    "run after alerting."
)
# The seeded workflows whose URLs name the demo's own endpoints (moved when serve moves).
MONITOR_KEYS = ("block-monitor", "reorg-safe-monitor")
# Seed markers of the pieces the live monitor added (see seed_demo): never rename them.
ALERTS_SEED = "alerts-token"
LIVE_MONITOR_SEED = "block-monitor-live"
RESPACE_SEED = "block-monitor-respaced"
LOOP_MONITOR_SEED = "block-monitor-every-block"


def _point_at(nodes: list[Any], base_url: str) -> list[Any] | None:
    """The nodes with their demo URLs moved to ``base_url``, or None when nothing changes (the
    site is served elsewhere than when the demo was seeded)."""
    changed = False
    out = []
    for node in nodes:
        config = node.get("data", {}).get("config", {}) if isinstance(node, dict) else {}
        url = config.get("url") if isinstance(config, dict) else None
        for path in (FEED_PATH, RPC_PATH, ALERTS_PATH):
            if isinstance(url, str) and url.endswith(path) and url != base_url.rstrip("/") + path:
                node = {**node, "data": {**node["data"], "config": {**config, "url": base_url.rstrip("/") + path}}}
                changed = True
        out.append(node)
    return out if changed else None


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
    graph: Callable[[str], Graph]  # given the site's own base URL (the live monitor calls it)
    changes: dict[str, Any] = field(default_factory=dict)


# Add demo workflows here; each is created once, in this order.
DEMO_WORKFLOWS: list[DemoWorkflow] = [
    DemoWorkflow(
        key="block-monitor",
        name=MONITOR_NAME,
        description=MONITOR_DESCRIPTION,
        graph=live_block_monitor_graph,
        changes={"active": True},  # it watches the feed by itself, every 10 s
    ),
    DemoWorkflow(
        key="reorg-safe-monitor",
        name=REORG_SAFE_NAME,
        description=REORG_SAFE_DESCRIPTION,
        graph=live_reorg_safe_monitor_graph,
        changes={"active": True},
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


def seed_demo(
    *,
    password: str | None = DEMO_PASSWORD,
    workflows: list[DemoWorkflow] | None = None,
    base_url: str = DEFAULT_BASE_URL,
) -> SeededDemo:
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
                nodes, edges = demo.graph(base_url)
                workflow = workflow_create(
                    organization=org, user=user, name=demo.name, description=demo.description, nodes=nodes, edges=edges
                )
                if demo.changes:
                    workflow = workflow_update(workflow, **demo.changes)
            done[demo.key] = workflow.pk
            found[demo.key] = workflow
            created.append(demo.key)

        if org is not None and ALERTS_SEED not in done:
            _seed_alerts_token(org)
            created.append(ALERTS_SEED)
        if LIVE_MONITOR_SEED not in done:
            _make_monitor_live(found.get("block-monitor"), base_url)
            created.append(LIVE_MONITOR_SEED)
        if RESPACE_SEED not in done:
            _respace_live_monitor(found.get("block-monitor"))
            created.append(RESPACE_SEED)
        if LOOP_MONITOR_SEED not in done:
            _make_monitor_see_every_block(found.get("block-monitor"), base_url)
            created.append(LOOP_MONITOR_SEED)

        DemoSeed.objects.bulk_create([DemoSeed(key=key, workflow_id=done.get(key)) for key in created])
    return SeededDemo(organization=org, user=user, user_created=user_created, workflows=found, created=created)


def _seed_alerts_token(org: Organization) -> None:
    """The secret the demo alerts endpoint checks, and the live monitor sends as its bearer token."""
    if not OrganizationSecret.objects.filter(organization=org, name=ALERTS_SECRET).exists():
        secret_put(organization=org, name=ALERTS_SECRET, value=secrets.token_urlsafe(24))


# Where the monitors' cards stood before the demo graphs took Auto-layout's spacing (they overlapped
# once rendered). A seeded graph whose cards all still stand there was never moved by anyone.
_INPUT_MONITOR_FIRST_Y = {"trigger": 0, "state-get-1": 120, "condition-1": 240, "state-set-1": 360}
_LIVE_MONITOR_FIRST_Y = {
    "trigger": 0, "fetch-block": 150, "state-get-1": 320, "condition-1": 460, "state-set-1": 610, "send-alert": 750,
}


def _positions(nodes: list[Any]) -> dict[Any, Any]:
    return {node.get("id"): node.get("position") for node in nodes if isinstance(node, dict)}


def _first_placed(nodes: list[dict[str, Any]], first_y: dict[str, int]) -> list[dict[str, Any]]:
    return [{**node, "position": {"x": 0, "y": first_y[node["id"]]}} for node in nodes]


def _make_monitor_live(workflow: Workflow | None, base_url: str) -> None:
    """A database seeded before the live monitor has the input-driven one: replace it once, and
    only if nobody changed it since it was seeded (as seeded then, or as block_monitor_graph is now)."""
    if workflow is None:
        return
    nodes, edges = block_monitor_graph()
    if (workflow.nodes, workflow.edges) in ((nodes, edges), (_first_placed(nodes, _INPUT_MONITOR_FIRST_Y), edges)):
        nodes, edges = live_block_monitor_graph(base_url)
        workflow_update(workflow, nodes=nodes, edges=edges, description=MONITOR_DESCRIPTION, active=True)


def _respace_live_monitor(workflow: Workflow | None) -> None:
    """A live monitor seeded with its first spacing, whose cards nobody has moved since, gets the
    spacing of live_block_monitor_graph, once (so the editor opens it without laying it out again);
    nothing else of it changes."""
    if workflow is None:
        return
    workflow.refresh_from_db()
    first = {node_id: {"x": 0, "y": y} for node_id, y in _LIVE_MONITOR_FIRST_Y.items()}
    if _positions(workflow.nodes) != first:
        return
    spaced = _positions(legacy_live_block_monitor_graph()[0])
    workflow_update(workflow, nodes=[{**node, "position": spaced[node["id"]]} for node in workflow.nodes])


def _shape(nodes: list[Any], edges: list[Any]) -> Any:
    """A graph without its cards' places and its URLs (serve moves those to its own address)."""
    def config(node: Any) -> Any:
        found = (node.get("data") or {}).get("config") or {} if isinstance(node, dict) else {}
        return {k: v for k, v in found.items() if k != "url"}
    return ([(n.get("id"), (n.get("data") or {}).get("label"), config(n)) for n in nodes if isinstance(n, dict)],
            edges)


def _make_monitor_see_every_block(workflow: Workflow | None, base_url: str) -> None:
    """A monitor seeded before For Each saw only the newest block of each tick: replace it with the
    one that alerts every block, once, and only if nobody changed it since it was seeded."""
    if workflow is None:
        return
    workflow.refresh_from_db()
    if _shape(workflow.nodes, workflow.edges) == _shape(*legacy_live_block_monitor_graph(base_url)):
        nodes, edges = live_block_monitor_graph(base_url)
        workflow_update(workflow, nodes=nodes, edges=edges, description=MONITOR_DESCRIPTION)


def point_demo_at(base_url: str) -> None:
    """Move the seeded monitors' demo URLs to where the site is served now (``serve`` on another
    address than at seeding); URLs that do not name the demo's own endpoints are left alone."""
    markers = DemoSeed.objects.filter(key__in=MONITOR_KEYS).values_list("workflow_id", flat=True)
    for workflow in Workflow.objects.alive().filter(pk__in=[m for m in markers if m]).order_by("created_at"):
        if (moved := _point_at(workflow.nodes, base_url)) is not None:
            workflow_update(workflow, nodes=moved)


def ensure_demo(
    *, password: str | None = DEMO_PASSWORD, base_url: str = DEFAULT_BASE_URL
) -> tuple[Organization | None, Any, Workflow | None]:
    """``seed_demo`` as (organization, user, Block monitor), for callers that want those three."""
    demo = seed_demo(password=password, base_url=base_url)
    return demo.organization, demo.user, demo.monitor


def seed_for_serve(base_url: str, *, embedded: bool) -> list[str]:
    """Seed what was never seeded, point the monitor at ``base_url``, and say what `serve`'s banner
    shows of the demo. The demo user's password is set (and printed) only on the embedded
    database; with DATABASE_URL the user gets an unusable one."""
    demo = seed_demo(password=DEMO_PASSWORD if embedded else None, base_url=base_url)
    point_demo_at(base_url)
    lines = [f"  demo workflow:  '{wf.name}' ({wf.id})" for wf in demo.workflows.values() if wf is not None]
    lines.append(f"  demo alerts:    {base_url}{ALERTS_PATH}  (chain JSON-RPC: POST {base_url}{RPC_PATH})")
    user = demo.user
    if user is None:
        return lines
    if not user.has_usable_password():
        lines.append(f"  log in:         set a password first: python manage.py changepassword {DEMO_USERNAME}")
    elif embedded and check_password(DEMO_PASSWORD, user.password):
        lines.append(f"  log in as:      {DEMO_USERNAME} / {DEMO_PASSWORD}")
    else:
        lines.append(f"  log in as:      {DEMO_USERNAME} (with the password set for it)")
    return lines
