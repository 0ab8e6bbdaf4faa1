"""The demo chain reorganises (KEEPERSTATE_DEMO_REORG_EVERY and _DEPTH), and the demo's Reorg-safe
monitor (keeperstate.workflows.examples.reorg_safe_monitor_graph) stays exact on it: the chain and
the alert sink served for real by pytest-django's live_server, the runs in this process.

Exact, as issue 42 asks: every block of the chain as it ends is alerted once (by the sink's
dedupKey), in order; a block the chain replaced was alerted before, and is named by its hash in one
``reorg`` alert; the cursor ends at the head with its hash; a reorganisation deeper than
maxReorgDepth fails the run with FAILED_BY_WORKFLOW after alerting. (tests/chain repeats this on
ganache with a real worker.)
"""

from __future__ import annotations

import json
from pathlib import Path

import pytest
from django.db import DatabaseError

from keeperstate.demo import feed as demo_feed
from keeperstate.demo.chain import ZERO_HASH, DemoChain, block_hash
from keeperstate.demo.graphs import ALERTS_PATH, ALERTS_SECRET, RPC_PATH, live_reorg_safe_monitor_graph
from keeperstate.demo.models import DemoAlert
from keeperstate.demo.seeding import REORG_SAFE_DESCRIPTION, REORG_SAFE_NAME, point_demo_at, seed_demo
from keeperstate.engine import runner
from keeperstate.engine.validation import validate_graph
from keeperstate.executions.service import run_workflow
from keeperstate.state.models import WorkflowState
from keeperstate.workflows.examples import MAX_REORG_DEPTH, reorg_safe_monitor_graph
from keeperstate.workflows.services import workflow_create, workflow_import

EVERY, DEPTH = 20, 4  # the demo's defaults: blocks 17–20, 37–40, … are replaced as 21, 41, … are mined
EXAMPLE = Path(__file__).resolve().parents[1] / "docs" / "examples" / "reorg-safe-monitor.json"


def chain_at(head: int, every: int = EVERY, depth: int = DEPTH) -> DemoChain:
    return DemoChain(head=head, genesis=demo_feed.GENESIS, block_seconds=3, reorg_every=every, reorg_depth=depth)


# --- the chain ------------------------------------------------------------------------------------


def test_the_blocks_up_to_a_reorg_point_are_replaced_once_the_next_block_is_mined():
    before, after = chain_at(40), chain_at(41)

    assert [n for n in range(41) if before.hash_of(n) != after.hash_of(n)] == [37, 38, 39, 40]
    assert [n for n in range(42) if after.replaced(n)] == [17, 18, 19, 20, 37, 38, 39, 40]
    assert after.hash_of(40) == block_hash(40, replaced=True) != block_hash(40) == before.hash_of(40)


def test_every_block_names_its_parents_hash_whatever_the_head():
    for head in range(70):
        chain = chain_at(head)
        for number in range(head + 1):
            parent = chain.block(number - 1)["hash"] if number else ZERO_HASH
            assert chain.block(number)["parentHash"] == parent, (head, number)


def test_block_zero_is_never_replaced_and_every_zero_never_reorganises():
    assert not chain_at(100, every=1, depth=1).replaced(0)
    assert chain_at(100, every=1, depth=1).replaced(99)
    assert not any(chain_at(100, every=0).replaced(n) for n in range(101))
    # a depth beyond the spacing replaces each block once: depth is held to every
    assert [n for n in range(1, 11) if chain_at(10, every=5, depth=9).replaced(n)] == [1, 2, 3, 4, 5]


@pytest.fixture
def clock(monkeypatch):
    """The chain's clock at the start of a block; ``to(head)`` and ``advance(blocks)`` move it, and
    ``after(calls, blocks)`` moves it by itself once that many more RPC calls have read it."""

    class Clock:
        at = demo_feed.GENESIS
        moves: list[tuple[int, int]] = []
        reads = 0

        def to(self, head):
            self.at = demo_feed.GENESIS + head * demo_feed.block_seconds()

        def advance(self, blocks):
            self.at += blocks * demo_feed.block_seconds()

        def after(self, calls, blocks):
            self.moves.append((self.reads + calls, blocks))

        def now(self):
            self.reads += 1
            for due, blocks in [m for m in self.moves if m[0] < self.reads]:
                self.moves.remove((due, blocks))
                self.advance(blocks)
            return self.at

    frozen = Clock()
    monkeypatch.setattr(demo_feed, "now", frozen.now)
    return frozen


@pytest.fixture
def reorganising(settings):
    settings.KEEPERSTATE_DEMO_REORG_EVERY = EVERY
    settings.KEEPERSTATE_DEMO_REORG_DEPTH = DEPTH


def rpc(client, method, *params):
    body = {"jsonrpc": "2.0", "id": 1, "method": method, "params": list(params)}
    return client.post("/demo/rpc/", json.dumps(body), content_type="application/json").json()["result"]


def test_the_rpc_node_and_the_feed_serve_the_reorganised_chain(client, clock, reorganising):
    clock.to(40)
    assert rpc(client, "eth_getBlockByNumber", hex(40), False)["hash"] == block_hash(40)
    assert client.get("/demo/feed/").json()["hash"] == block_hash(40)

    clock.advance(1)

    assert rpc(client, "eth_getBlockByNumber", hex(40), False)["hash"] == block_hash(40, replaced=True)
    assert rpc(client, "eth_getBlockByNumber", hex(41), False)["parentHash"] == block_hash(40, replaced=True)
    assert rpc(client, "eth_getBlockByNumber", hex(36), False)["hash"] == block_hash(36)


def test_with_reorg_every_zero_the_chain_never_reorganises(client, clock, settings):
    settings.KEEPERSTATE_DEMO_REORG_EVERY = 0
    clock.to(41)

    assert rpc(client, "eth_getBlockByNumber", hex(40), False)["hash"] == block_hash(40)


# --- the monitor on it ------------------------------------------------------------------------------


@pytest.fixture
def served(live_server, settings, transactional_db, reorganising):
    host = live_server.url.removeprefix("http://")
    settings.KEEPERSTATE_HTTP_ALLOW = [f"{host}/demo/"]  # what `serve` does for its own address
    return seed_demo(password=None, base_url=live_server.url)


@pytest.fixture
def monitor(served):
    return served.workflows["reorg-safe-monitor"]


@pytest.fixture
def example(served, live_server):
    """The example graph with other settings, in the demo organization (its ALERTS_TOKEN)."""

    def make(**settings):
        base = live_server.url
        nodes, edges = reorg_safe_monitor_graph(base + RPC_PATH, base + ALERTS_PATH, alerts_secret=ALERTS_SECRET,
                                                **settings)
        return workflow_create(organization=served.organization, user=served.user, name=f"Monitor {settings}",
                               nodes=nodes, edges=edges)

    return make


def alerts(kind: str | None = None) -> list[dict]:
    kept = DemoAlert.objects.order_by("id").values_list("payload", flat=True)
    return [payload for payload in kept if kind is None or payload.get("type") == kind]


def blocks_alerted() -> list[tuple[int, str]]:
    return [(a["block"], a["hash"]) for a in alerts("block")]


def cursor(workflow) -> dict:
    return WorkflowState.objects.get(workflow=workflow, key="cursor").value


def ran(workflow):
    execution = run_workflow(workflow, {})
    assert execution.status == "success", (execution.error, execution.node_results)
    return execution


def assert_exact(workflow, head: int, first: int, depth: int = MAX_REORG_DEPTH) -> None:
    """Every block first…head of the chain as it is now was alerted, once, with its hash; every
    other block alerted is named by a reorg alert sent after its own; the cursor is at the head with
    its hash, keeps the newest 2 × depth + 1 hashes and says the last alert went out."""
    chain = chain_at(head)
    canonical = [(n, chain.hash_of(n)) for n in range(first, head + 1)]
    alerted = blocks_alerted()
    assert sorted(set(alerted) & set(canonical)) == canonical
    keys = [a["dedupKey"] for a in alerts()]
    for number, old_hash in set(alerted) - set(canonical):
        naming = [i for i, a in enumerate(alerts()) if a["type"] == "reorg" and old_hash in a["oldHashes"]]
        assert naming, (number, old_hash)
        assert naming[0] > keys.index(f"block-{old_hash}"), (number, old_hash)
    assert cursor(workflow) == {"number": head, "hash": chain.hash_of(head),
                                "recent": [h for _, h in canonical][-(2 * depth + 1):], "sent": True}


def test_the_demo_has_the_reorg_safe_monitor_active_and_its_graph_as_written(served, live_server):
    workflow = served.workflows["reorg-safe-monitor"]
    nodes, edges = live_reorg_safe_monitor_graph(live_server.url)

    assert (workflow.name, workflow.description, workflow.active) == (REORG_SAFE_NAME, REORG_SAFE_DESCRIPTION, True)
    assert (workflow.nodes, workflow.edges) == (nodes, edges)
    report = validate_graph(nodes, edges)
    assert (report.valid, report.warnings, report.nodes == nodes) == (True, [], True), report.as_dict()
    # and serve on another address moves its URLs too
    point_demo_at("http://127.0.0.1:9000")
    workflow.refresh_from_db()
    configs = [n["data"]["config"] for n in workflow.nodes]
    urls = {c["url"] for c in configs if c.get("actionType") == "HTTP Request"}
    assert urls == {"http://127.0.0.1:9000/demo/rpc/", "http://127.0.0.1:9000/demo/alerts/"}


def test_a_reorganisation_is_named_in_one_alert_and_the_new_blocks_alerted_in_order(monitor, clock):
    # given a monitor that started at head 58 (it alerts 2 × maxReorgDepth blocks back) and then saw 59, 60
    clock.to(58)
    ran(monitor)
    assert blocks_alerted() == [(n, chain_at(58).hash_of(n)) for n in range(34, 59)]
    clock.advance(2)
    ran(monitor)
    assert cursor(monitor)["number"] == 60

    # when the chain replaces blocks 57–60 (mined on from 61) and the monitor runs at 63
    clock.advance(3)
    execution = ran(monitor)

    # then one reorg alert names blocks 57–60 with the hashes alerted, the cursor went back to 56 with
    # compare-and-set, and 57–63 of the new chain were alerted after it, in order
    (reorg,) = alerts("reorg")
    assert {k: reorg[k] for k in ("from", "to", "depth", "ancestor", "ancestorHash", "oldHashes", "dedupKey")} == {
        "from": 57, "to": 60, "depth": 4, "ancestor": 56, "ancestorHash": block_hash(56),
        "oldHashes": [block_hash(n) for n in range(57, 61)], "dedupKey": f"reorg-56-{block_hash(60)}",
    }
    after = alerts()[alerts().index(reorg) + 1:]
    assert [(a["block"], a["hash"]) for a in after] == [(n, chain_at(63).hash_of(n)) for n in range(57, 64)]
    versions = execution.node_results["cursor"]["data"]["version"], execution.node_results["rewind"]["data"]["version"]
    assert versions[1] == versions[0] + 1  # the compare-and-set against the version read
    assert_exact(monitor, 63, first=34)

    # and a run with nothing new checks the cursor's block only and alerts nothing
    quiet = ran(monitor)
    assert quiet.node_results["check"]["data"] == {"count": 1, "truncated": False, "remaining": 12, "stopped": True}
    assert quiet.node_results["each-block"]["data"]["count"] == 0
    assert len(alerts()) == 25 + 2 + 1 + 7


def test_a_run_cut_short_after_the_reorg_alert_sends_it_again_and_the_sink_keeps_it_once(monitor, clock):
    clock.to(58)
    ran(monitor)
    clock.advance(2)
    ran(monitor)
    before = cursor(monitor)
    clock.advance(3)
    ran(monitor)
    # as if that run had died between Reorg alert and Rewind cursor
    WorkflowState.objects.filter(workflow=monitor, key="cursor").update(value=before)

    again = ran(monitor)

    assert again.node_results["reorg-alert"]["data"]["body"]["duplicate"] is True
    assert len(alerts("reorg")) == 1
    assert all(i["data"]["body"]["duplicate"] for i in again.node_results["send-alert"]["iterations"])
    assert_exact(monitor, 63, first=34)


@pytest.fixture
def dies(monkeypatch):
    """``dies(node_id, item)``: the next run stops, as if its process died, when it reaches that node
    of Each block's body on that item (after the nodes before it committed)."""
    original = runner.run_node
    at: list[tuple[str, int]] = []

    def run_node(graph, node_id, results, labels, ctx):
        loop = results.get("each-block")
        if at and loop is not None and (node_id, loop.data.get("item")) == at[0]:
            at.clear()
            raise DatabaseError("server closed the connection unexpectedly")
        return original(graph, node_id, results, labels, ctx)

    monkeypatch.setattr(runner, "run_node", run_node)
    return lambda node_id, item: at.append((node_id, item))


def test_a_block_taken_but_not_alerted_is_alerted_by_the_next_run(monitor, clock, dies):
    # given a run that dies after taking block 56 into the cursor, before its alert went out
    clock.to(56)
    dies("send-alert", 56)
    with pytest.raises(DatabaseError):
        run_workflow(monitor, {})
    assert (cursor(monitor)["number"], cursor(monitor)["sent"]) == (56, False)
    assert blocks_alerted()[-1][0] == 55

    # when the next run finds the chain unchanged
    again = ran(monitor)

    # then it sends block 56's alert and marks it sent, and nothing else
    assert again.node_results["resend"]["data"]["body"]["duplicate"] is False
    assert blocks_alerted()[-1] == (56, block_hash(56))
    assert_exact(monitor, 56, first=32)


def test_a_block_alerted_by_a_run_that_died_and_then_replaced_is_named_in_the_reorg_alert(monitor, clock, dies):
    # given a run that dies after block 58's alert, before marking it sent (the cursor at 58, not sent)
    clock.to(56)
    ran(monitor)
    clock.to(60)
    dies("mark-sent", 58)
    with pytest.raises(DatabaseError):
        run_workflow(monitor, {})
    assert blocks_alerted()[-1] == (58, block_hash(58))
    assert (cursor(monitor)["number"], cursor(monitor)["sent"]) == (58, False)

    # when 57–60 are replaced before the next run
    clock.advance(1)
    ran(monitor)

    # then the reorg alert names 57 and 58 as they were alerted, and the new chain follows
    (reorg,) = alerts("reorg")
    assert (reorg["from"], reorg["to"], reorg["oldHashes"]) == (57, 58, [block_hash(57), block_hash(58)])
    assert_exact(monitor, 61, first=32)


def test_with_confirmations_only_blocks_that_deep_are_alerted_and_a_shallower_reorg_never_reaches_them(
    example, clock
):
    monitor = example(confirmations=DEPTH)
    clock.to(58)
    ran(monitor)
    assert [n for n, _ in blocks_alerted()] == list(range(30, 55))  # up to 58 - 4, from 2 × 12 below

    clock.advance(5)  # 57–60 replaced, at head 63
    ran(monitor)

    assert alerts("reorg") == []
    assert blocks_alerted()[-1] == (59, chain_at(63).hash_of(59))
    assert blocks_alerted() == [(n, chain_at(63).hash_of(n)) for n in range(30, 60)]


def test_a_reorganisation_deeper_than_max_reorg_depth_fails_the_run_with_its_code_after_alerting(example, clock):
    # given a monitor keeping 3 blocks (maxReorgDepth 2) that alerted up to 60
    monitor = example(max_reorg_depth=2)
    clock.to(58)
    ran(monitor)
    clock.advance(2)
    ran(monitor)
    kept = cursor(monitor)

    # when 57–60 are replaced: none of 58, 59, 60 is in the chain any more
    clock.advance(1)
    failed = run_workflow(monitor, {})

    # then the run fails with the code, after one alert saying so; nothing else moved
    assert (failed.status, failed.error_code) == ("error", "FAILED_BY_WORKFLOW")
    assert "reorganised deeper than maxReorgDepth (2)" in failed.error
    assert failed.node_results["too-deep"]["details"] == {"block": 60, "hash": block_hash(60), "maxReorgDepth": 2}
    (too_deep,) = alerts("reorg-too-deep")
    assert (too_deep["cursor"], too_deep["dedupKey"]) == (kept, f"reorg-too-deep-{block_hash(60)}")
    assert cursor(monitor) == kept
    assert "each-block" not in failed.node_results or failed.node_results["each-block"] == {"skipped": True}
    # and every later run fails the same way, the sink keeping the one alert
    again = run_workflow(monitor, {})
    assert (again.status, again.error_code) == ("error", "FAILED_BY_WORKFLOW")
    assert len(alerts("reorg-too-deep")) == 1


def test_a_block_that_does_not_follow_the_saved_one_ends_the_run_and_the_next_run_names_the_reorg(monitor, clock):
    # given a monitor at 56, and a chain that replaces 57–60 while the next run is on block 58
    clock.to(56)
    ran(monitor)
    clock.to(60)
    clock.after(3, 1)  # Head, the check of 56 and block 57 read head 60; block 58 reads 61

    cut = ran(monitor)

    # then block 57 (as it was) was alerted and saved, and the loop stopped at 58, alerting nothing more
    assert cut.node_results["each-block"]["data"] == {"count": 2, "truncated": False, "remaining": 2, "stopped": True}
    assert blocks_alerted()[-1] == (57, block_hash(57))
    assert (cursor(monitor)["number"], cursor(monitor)["hash"]) == (57, block_hash(57))

    # and the next run names 57 in a reorg alert and alerts the new chain from there
    ran(monitor)
    (reorg,) = alerts("reorg")
    assert (reorg["from"], reorg["to"], reorg["oldHashes"]) == (57, 57, [block_hash(57)])
    assert_exact(monitor, 61, first=32)


@pytest.mark.django_db
def test_the_importable_example_is_the_example_graph_and_imports(org, user):
    document = json.loads(EXAMPLE.read_text())
    nodes, edges = reorg_safe_monitor_graph()

    assert (document["nodes"], document["edges"]) == (nodes, edges)
    assert document["name"] == REORG_SAFE_NAME
    imported = workflow_import(organization=org, user=user, document=document)
    assert (imported.nodes, imported.edges) == (nodes, edges)
