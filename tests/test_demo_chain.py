"""The demo chain's JSON-RPC node (POST /demo/rpc/, keeperstate.demo.chain): eth_blockNumber and
eth_getBlockByNumber as an Ethereum node answers them, the JSON-RPC errors, and a block time
shorter than the shortest schedule."""

from __future__ import annotations

import json
import re

import pytest

from keeperstate.demo import feed as demo_feed
from keeperstate.demo.chain import DemoChain, block_hash

HEX_HASH = re.compile(r"^0x[0-9a-f]{64}$")
HEAD = 1_000_000


@pytest.fixture
def clock(monkeypatch):
    """The chain's clock at the start of block HEAD; ``clock.advance(blocks)`` moves it."""

    class Clock:
        at = demo_feed.GENESIS + HEAD * demo_feed.block_seconds()

        def advance(self, blocks):
            self.at += blocks * demo_feed.block_seconds()

    frozen = Clock()
    monkeypatch.setattr(demo_feed, "now", lambda: frozen.at)
    return frozen


def call(client, body):
    raw = body if isinstance(body, str | bytes) else json.dumps(body)
    return client.post("/demo/rpc/", raw, content_type="application/json")


def rpc(client, method, params=(), call_id=1):
    response = call(client, {"jsonrpc": "2.0", "id": call_id, "method": method, "params": list(params)})
    assert response.status_code == 200
    return response.json()


def test_block_number_is_the_head_as_hex(client, clock):
    assert rpc(client, "eth_blockNumber") == {"jsonrpc": "2.0", "id": 1, "result": hex(HEAD)}


def test_the_head_moves_with_the_clock(client, clock):
    clock.advance(4)

    assert rpc(client, "eth_blockNumber")["result"] == hex(HEAD + 4)


def test_a_block_has_its_number_hash_parent_and_time(client, clock):
    block = rpc(client, "eth_getBlockByNumber", ["0x1a2", False])["result"]

    assert block["number"] == "0x1a2"
    assert HEX_HASH.match(block["hash"])
    assert block["parentHash"] == rpc(client, "eth_getBlockByNumber", ["0x1a1", False])["result"]["hash"]
    assert int(block["timestamp"], 16) == demo_feed.GENESIS + 0x1A2 * demo_feed.block_seconds()


def test_hashes_are_deterministic_and_distinct_per_block():
    hashes = [block_hash(n) for n in range(200)]

    assert hashes == [block_hash(n) for n in range(200)]
    assert len(set(hashes)) == 200
    assert all(HEX_HASH.match(h) for h in hashes)
    assert block_hash(-1) == "0x" + "0" * 64  # block 0's parent


def test_the_head_block_exists_and_the_next_is_null(client, clock):
    head = rpc(client, "eth_getBlockByNumber", [hex(HEAD), False])
    beyond = rpc(client, "eth_getBlockByNumber", [hex(HEAD + 1), False])

    assert head["result"]["number"] == hex(HEAD)
    assert beyond == {"jsonrpc": "2.0", "id": 1, "result": None}


@pytest.mark.parametrize(("tag", "number"), [("latest", HEAD), ("earliest", 0), ("0x0", 0)])
def test_block_tags(client, clock, tag, number):
    assert rpc(client, "eth_getBlockByNumber", [tag, True])["result"]["number"] == hex(number)


def test_the_id_comes_back_as_sent(client, clock):
    assert rpc(client, "eth_blockNumber", call_id="abc")["id"] == "abc"


def test_an_unknown_method_is_method_not_found(client, clock):
    answer = rpc(client, "eth_getBalance", ["0x0", "latest"], call_id=7)

    assert answer["id"] == 7
    assert answer["error"]["code"] == -32601
    assert "eth_blockNumber" in answer["error"]["message"]
    assert "result" not in answer


@pytest.mark.parametrize("params", [
    [26, False],  # a number, not hex text
    ["0x01a", False],  # leading zero, which geth refuses
    ["0x", False],
    ["1a", False],
    ["0x1a"],  # the second parameter is required
    ["0x1a", "false"],
    ["0x1a", False, 3],
])
def test_bad_block_params_are_invalid_params(client, clock, params):
    answer = rpc(client, "eth_getBlockByNumber", params)

    assert answer["error"]["code"] == -32602
    assert "0x1a2" in answer["error"]["message"]


def test_block_number_takes_no_params(client, clock):
    assert rpc(client, "eth_blockNumber", ["latest"])["error"]["code"] == -32602


@pytest.mark.parametrize("body", ["{not json", "", "NaN"])
def test_a_body_that_is_not_json_is_a_parse_error(client, clock, body):
    response = call(client, body)

    assert response.status_code == 200
    assert response.json() == {"jsonrpc": "2.0", "id": None,
                               "error": {"code": -32700, "message": "Parse error: the body is not JSON."}}


@pytest.mark.parametrize("body", [
    {"id": 1, "method": "eth_blockNumber"},  # no "jsonrpc": "2.0"
    {"jsonrpc": "2.0", "id": 1},
    {"jsonrpc": "2.0", "id": {"x": 1}, "method": "eth_blockNumber"},
    "3",
    [],
])
def test_a_call_that_is_no_request_is_invalid_request(client, clock, body):
    assert call(client, body).json()["error"]["code"] == -32600


def test_params_by_name_are_invalid_params(client, clock):
    answer = call(client, {"jsonrpc": "2.0", "id": 1, "method": "eth_blockNumber", "params": {"a": 1}}).json()

    assert answer["error"]["code"] == -32602


def test_a_batch_is_answered_call_by_call(client, clock):
    answers = call(client, [
        {"jsonrpc": "2.0", "id": 1, "method": "eth_blockNumber", "params": []},
        {"jsonrpc": "2.0", "id": 2, "method": "eth_nope", "params": []},
        {"jsonrpc": "2.0", "method": "eth_blockNumber", "params": []},  # a notification: no answer
    ]).json()

    assert [a["id"] for a in answers] == [1, 2]
    assert answers[0]["result"] == hex(HEAD)
    assert answers[1]["error"]["code"] == -32601


def test_a_notification_gets_no_answer(client, clock):
    response = call(client, {"jsonrpc": "2.0", "method": "eth_blockNumber", "params": []})

    assert response.status_code == 204
    assert response.content == b""


def test_get_is_not_allowed(client):
    assert client.get("/demo/rpc/").status_code == 405


def test_the_feed_shows_the_same_chain(client, clock):
    head = client.get("/demo/feed/").json()

    assert head["block"] == HEAD
    assert head["hash"] == block_hash(HEAD)


def test_the_chain_mines_faster_than_the_shortest_schedule(settings):
    # the default block time: a monitor on the shortest interval sees several new blocks per tick
    assert demo_feed.block_seconds() == 3
    assert settings.KEEPERSTATE_MIN_INTERVAL // demo_feed.block_seconds() >= 3


def test_block_objects_are_pure_functions_of_the_chain():
    chain = DemoChain(head=5, genesis=100, block_seconds=2)

    assert chain.block(5) == {"number": "0x5", "hash": block_hash(5), "parentHash": block_hash(4),
                              "timestamp": hex(110), "transactions": []}
    assert chain.block(6) is None
