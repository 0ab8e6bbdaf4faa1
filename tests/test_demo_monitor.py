"""The demo Block monitor against the demo's own feed and alerts endpoints, served for real by
pytest-django's live_server: the cursor advances once per new block and each block alerts once."""

from __future__ import annotations

import json

import pytest
from django.test import Client

from keeperstate.demo import feed as demo_feed
from keeperstate.demo.chain import block_hash
from keeperstate.demo.graphs import BLOCKS_PER_RUN, live_block_monitor_graph
from keeperstate.demo.models import DemoAlert
from keeperstate.demo.seeding import ensure_demo, point_demo_at
from keeperstate.engine.validation import validate_graph
from keeperstate.executions.service import run_workflow
from keeperstate.secrets.vault import SecretVault
from keeperstate.state.models import WorkflowState
from keeperstate.workflows.examples import block_monitor_graph


@pytest.fixture
def clock(monkeypatch):
    """The feed's clock, at the start of a block; ``clock.advance(blocks)`` moves it."""

    class Clock:
        at = demo_feed.GENESIS + 1_000_000 * 5

        def advance(self, blocks):
            self.at += blocks * demo_feed.block_seconds()

    frozen = Clock()
    monkeypatch.setattr(demo_feed, "now", lambda: frozen.at)
    return frozen


@pytest.fixture
def demo(live_server, settings, transactional_db):
    host = live_server.url.removeprefix("http://")
    settings.KEEPERSTATE_HTTP_ALLOW = [f"{host}/demo/"]  # what `serve` does for its own address
    _org, _user, workflow = ensure_demo(password=None, base_url=live_server.url)
    return workflow


def test_the_demo_graph_is_valid_and_stored_as_it_is_written():
    nodes, edges = live_block_monitor_graph()

    report = validate_graph(nodes, edges)

    assert report.valid, report.as_dict()
    assert report.warnings == []
    assert report.nodes == nodes  # seeding compares stored graphs with it


def _alerted() -> list[int]:
    return sorted(DemoAlert.objects.values_list("payload__block", flat=True))


def _cursor(workflow):
    return WorkflowState.objects.get(workflow=workflow, key="cursor").value


def test_every_block_since_the_cursor_is_alerted_once_with_its_hash(demo, clock):
    head = demo_feed.current_block()

    # first run: no cursor yet, so it starts at the head
    first = run_workflow(demo, {})
    assert first.status == "success", first.node_results
    assert _alerted() == [head]
    assert _cursor(demo) == head

    # the same head again: nothing to alert, nothing written
    again = run_workflow(demo, {})
    assert again.status == "success", again.node_results
    assert again.node_results["each-block"]["data"]["count"] == 0
    assert _alerted() == [head]

    # three blocks between two ticks: each one alerted, in order, with its own hash as dedupKey
    clock.advance(3)
    third = run_workflow(demo, {})
    assert third.status == "success", third.node_results
    assert _alerted() == [head, head + 1, head + 2, head + 3]
    for alert in DemoAlert.objects.filter(payload__block__gt=head):
        block = alert.payload["block"]
        assert alert.payload["hash"] == alert.dedup_key == block_hash(block)
        assert alert.payload["execution"] == str(third.id)
        assert alert.payload["index"] == block - head - 1
    assert _cursor(demo) == head + 3


def test_a_monitor_far_behind_catches_up_a_bounded_number_of_blocks_a_run(demo, clock):
    head = demo_feed.current_block()
    run_workflow(demo, {})
    clock.advance(BLOCKS_PER_RUN + 20)

    behind = run_workflow(demo, {})
    assert behind.status == "success", behind.node_results
    assert _cursor(demo) == head + BLOCKS_PER_RUN
    caught_up = run_workflow(demo, {})
    assert caught_up.status == "success", caught_up.node_results

    assert _cursor(demo) == head + BLOCKS_PER_RUN + 20
    assert _alerted() == list(range(head, head + BLOCKS_PER_RUN + 21))


def test_a_run_cut_short_after_its_alert_alerts_again_and_the_receiver_keeps_it_once(demo, clock):
    head = demo_feed.current_block()
    run_workflow(demo, {})
    clock.advance(2)
    run_workflow(demo, {})
    # as if the last run had died between Send alert and Save cursor of its last block
    WorkflowState.objects.filter(workflow=demo, key="cursor").update(value=head + 1)

    resumed = run_workflow(demo, {})

    assert resumed.status == "success", resumed.node_results
    sent = resumed.node_results["send-alert"]["iterations"]
    assert [i["data"]["body"] for i in sent] == [{"received": DemoAlert.objects.get(payload__block=head + 2).pk,
                                                  "duplicate": True}]
    assert _alerted() == [head, head + 1, head + 2]
    assert _cursor(demo) == head + 2


def test_alert_token_is_redacted_in_the_run(demo, clock):
    token = SecretVault(demo.organization_id).value(demo_feed.ALERTS_SECRET)

    execution = run_workflow(demo, {})

    execution.refresh_from_db()
    assert token not in json.dumps(execution.node_results)


def test_alerts_endpoint_refuses_a_wrong_token(live_server, transactional_db):
    ensure_demo(password=None)

    response = Client().post("/demo/alerts/", "{}", content_type="application/json", HTTP_AUTHORIZATION="Bearer nope")

    assert response.status_code == 401
    assert DemoAlert.objects.count() == 0


def test_feed_grows_every_few_seconds(clock, client):
    before = client.get("/demo/feed/").json()["block"]
    clock.advance(3)

    assert client.get("/demo/feed/").json()["block"] == before + 3


def test_alerts_page_lists_what_arrived(demo, clock):
    run_workflow(demo, {})
    client = Client()
    client.force_login(demo.organization.memberships.get().user)  # the demo user: its alerts

    html = client.get("/demo/alerts/").content.decode()
    listed = client.get("/demo/alerts/?format=json").json()["alerts"]

    assert str(demo_feed.current_block()) in html
    assert listed[0]["payload"]["block"] == demo_feed.current_block()


def test_serve_allows_only_its_own_demo_path(monkeypatch, settings):
    from keeperstate.management.commands.serve import allow_own_address

    monkeypatch.delenv("KEEPERSTATE_HTTP_ALLOW", raising=False)
    settings.KEEPERSTATE_HTTP_ALLOW = []

    allow_own_address("http://127.0.0.1:8080")
    allow_own_address("http://127.0.0.1:8080")

    assert settings.KEEPERSTATE_HTTP_ALLOW == ["127.0.0.1:8080/demo/"]
    import os

    assert os.environ["KEEPERSTATE_HTTP_ALLOW"] == "127.0.0.1:8080/demo/"


def test_an_existing_demo_monitor_follows_the_servers_address(transactional_db):
    _org, _user, workflow = ensure_demo(password=None, base_url="http://127.0.0.1:8000")

    point_demo_at("http://127.0.0.1:9000")

    workflow.refresh_from_db()
    configs = [n["data"]["config"] for n in workflow.nodes]
    urls = [c["url"] for c in configs if c.get("actionType") == "HTTP Request"]
    rpc, alerts = "http://127.0.0.1:9000/demo/rpc/", "http://127.0.0.1:9000/demo/alerts/"
    assert urls == [rpc, rpc, alerts]


@pytest.mark.concurrency
def test_racing_runs_on_one_new_block_keep_one_alert(demo, clock):
    import threading

    from django.db import connection

    barrier = threading.Barrier(4)
    statuses: list[str] = []

    def one_run():
        try:
            barrier.wait(timeout=30)
            statuses.append(run_workflow(demo, {}).status)
        finally:
            connection.close()

    threads = [threading.Thread(target=one_run) for _ in range(4)]
    for thread in threads:
        thread.start()
    for thread in threads:
        thread.join(timeout=120)
    assert not any(t.is_alive() for t in threads), "a run did not finish"

    # every run sent the new block's alert (at least once); the receiver kept it once, by its hash
    assert statuses == ["success"] * 4
    assert _alerted() == [demo_feed.current_block()]


@pytest.mark.parametrize("spacing", ["as now", "as first seeded"])
def test_a_monitor_seeded_input_driven_becomes_live_once_if_untouched(transactional_db, spacing):
    from keeperstate.demo.models import DemoSeed
    from keeperstate.demo.seeding import LIVE_MONITOR_SEED

    # given: a database seeded before the live monitor (its graph, no live marker)
    _org, _user, workflow = ensure_demo(password=None)
    nodes, edges = block_monitor_graph()
    if spacing == "as first seeded":  # its cards 120 px apart, before they took Auto-layout's places
        nodes = [{**node, "position": {"x": 0, "y": 120 * i}} for i, node in enumerate(nodes)]
    workflow.nodes, workflow.edges = nodes, edges
    workflow.save()
    DemoSeed.objects.filter(key=LIVE_MONITOR_SEED).delete()

    # when serve seeds again
    ensure_demo(password=None)

    # then it is the live one, and a later change of the person's sticks
    workflow.refresh_from_db()
    assert (workflow.nodes, workflow.edges) == live_block_monitor_graph()
    workflow.nodes, workflow.edges = nodes, edges
    workflow.save()
    ensure_demo(password=None)
    workflow.refresh_from_db()
    assert (workflow.nodes, workflow.edges) == (nodes, edges)
