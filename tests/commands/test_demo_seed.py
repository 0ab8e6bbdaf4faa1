"""Demo seeding runs once per piece: what a person changed is never reset or recreated."""

from __future__ import annotations

import pytest
from django.contrib.auth import get_user_model

from keeperstate.demo.graphs import legacy_live_block_monitor_graph, live_block_monitor_graph
from keeperstate.demo.models import DemoSeed
from keeperstate.demo.seeding import (
    ALERTS_SEED,
    DEMO_WORKFLOWS,
    LIVE_MONITOR_SEED,
    LOOP_MONITOR_SEED,
    MONITOR_NAME,
    RESPACE_SEED,
    DemoWorkflow,
    seed_demo,
)
from keeperstate.engine.validation import validate_graph
from keeperstate.workflows.examples import block_monitor_graph
from keeperstate.workflows.models import Workflow
from keeperstate.workflows.services import workflow_hard_delete

pytestmark = pytest.mark.django_db


def test_the_demo_password_is_set_when_the_user_is_created_and_never_reset():
    first = seed_demo()
    user = first.user
    user.set_password("my own password")
    user.save()

    again = seed_demo()

    user.refresh_from_db()
    assert first.user_created
    assert not again.user_created
    assert user.check_password("my own password")
    assert again.created == []


def test_a_renamed_demo_workflow_is_not_recreated():
    monitor = seed_demo().monitor
    monitor.name = "My monitor"
    monitor.save()

    again = seed_demo()

    assert again.monitor == monitor
    assert again.monitor.name == "My monitor"
    assert not Workflow.objects.filter(name=MONITOR_NAME).exists()


@pytest.mark.parametrize("how", ["soft", "hard"])
def test_a_deleted_demo_workflow_is_not_recreated(how):
    monitor = seed_demo().monitor
    if how == "soft":
        monitor.soft_delete()
    else:
        workflow_hard_delete(monitor)

    again = seed_demo()

    assert again.monitor is None
    assert not Workflow.objects.alive().filter(name=MONITOR_NAME).exists()


def test_a_demo_workflow_added_later_is_created_once_next_to_the_others():
    seed_demo()
    later = DemoWorkflow(key="later", name="Added later", description="", graph=block_monitor_graph)

    added = seed_demo(workflows=[*DEMO_WORKFLOWS, later])
    again = seed_demo(workflows=[*DEMO_WORKFLOWS, later])

    assert added.created == ["later"]
    assert again.created == []
    assert Workflow.objects.filter(name="Added later").count() == 1
    assert again.workflows["later"] == added.workflows["later"]


def test_a_database_seeded_before_markers_adopts_its_demo_instead_of_duplicating_it():
    seed_demo()
    user = get_user_model().objects.get(username="demo")
    user.set_password("changed before the upgrade")
    user.save()
    DemoSeed.objects.all().delete()  # as before this release

    again = seed_demo()

    user.refresh_from_db()
    assert user.check_password("changed before the upgrade")
    assert Workflow.objects.filter(name=MONITOR_NAME).count() == 1
    # (and the pieces the live monitor brought: its alerts secret, the one-time upgrade markers)
    pieces = {"organization", "user", *(w.key for w in DEMO_WORKFLOWS), ALERTS_SEED, LIVE_MONITOR_SEED, RESPACE_SEED,
              LOOP_MONITOR_SEED}
    assert set(again.created) == pieces


def test_without_the_embedded_database_the_demo_user_cannot_log_in_until_given_a_password():
    demo = seed_demo(password=None)

    assert not demo.user.has_usable_password()


def test_the_demo_heartbeat_is_scheduled_and_active():
    demo = seed_demo(password=None)

    heartbeat = demo.workflows["heartbeat"]
    assert heartbeat is not None
    assert heartbeat.active is True
    assert heartbeat.next_run_at is not None
    assert validate_graph(heartbeat.nodes, heartbeat.edges).valid


def test_the_demo_block_monitor_watches_the_feed_by_itself():
    monitor = seed_demo(password=None).monitor

    assert monitor is not None
    assert monitor.active is True
    assert monitor.next_run_at is not None
    trigger = next(n for n in monitor.nodes if n["type"] == "trigger")
    assert trigger["data"]["config"]["triggerType"] == "Schedule"


def _placed(nodes: list, ys: list[int]) -> list:
    return [{**node, "position": {"x": 0, "y": y}} for node, y in zip(nodes, ys, strict=True)]


def _legacy_monitor(ys: list[int]):
    """The demo monitor as seeded before For Each, its cards at ``ys``, as the parser stores it."""
    nodes, edges = legacy_live_block_monitor_graph()
    return validate_graph(_placed(nodes, ys), edges).nodes, edges


def test_a_live_monitor_seeded_with_overlapping_cards_is_respaced_once_if_nobody_moved_them():
    # given: a database seeded when the live monitor's cards stood 150 px or so apart
    monitor = seed_demo().monitor
    first, edges = _legacy_monitor([0, 150, 320, 460, 610, 750])
    monitor.nodes, monitor.edges = first, edges
    monitor.save()
    DemoSeed.objects.filter(key=RESPACE_SEED).delete()

    # when serve seeds again
    seed_demo()

    # then it stands as Auto-layout places it, with nothing else changed
    monitor.refresh_from_db()
    spaced = {n["id"]: n["position"] for n in legacy_live_block_monitor_graph()[0]}
    assert {n["id"]: n["position"] for n in monitor.nodes} == spaced
    assert [{**n, "position": None} for n in monitor.nodes] == [{**n, "position": None} for n in first]


def test_a_live_monitor_whose_cards_were_moved_keeps_its_places():
    monitor = seed_demo().monitor
    moved, edges = _legacy_monitor([0, 150, 320, 460, 610, 800])
    monitor.nodes, monitor.edges = moved, edges
    monitor.save()
    DemoSeed.objects.filter(key=RESPACE_SEED).delete()

    seed_demo()

    monitor.refresh_from_db()
    assert monitor.nodes == moved


def test_a_monitor_seeded_before_for_each_alerts_every_block_after_the_upgrade_if_untouched():
    # given: the monitor as seeded before For Each, never changed (its first spacing, even)
    monitor = seed_demo().monitor
    monitor.nodes, monitor.edges = _legacy_monitor([0, 150, 320, 460, 610, 750])
    monitor.save()
    DemoSeed.objects.filter(key__in=[RESPACE_SEED, LOOP_MONITOR_SEED]).delete()

    seed_demo()

    monitor.refresh_from_db()
    assert (monitor.nodes, monitor.edges) == live_block_monitor_graph()
    assert "every block" in monitor.description


def test_a_changed_monitor_from_before_for_each_is_left_as_it_is():
    monitor = seed_demo().monitor
    nodes, edges = _legacy_monitor([0, 174, 376, 535, 710, 906])
    nodes[1]["data"]["label"] = "My fetch"
    monitor.nodes, monitor.edges = nodes, edges
    monitor.save()
    DemoSeed.objects.filter(key=LOOP_MONITOR_SEED).delete()

    seed_demo()

    monitor.refresh_from_db()
    assert monitor.nodes[1]["data"]["label"] == "My fetch"
    assert any(n["data"]["config"].get("actionType") == "Condition" for n in monitor.nodes)
