"""One answer to "what runs before this node" (keeperstate.engine.scope), seen from its three
readers: the nodes the @ offers list, the references the validator lets through, and what the
runner has settled when the node starts, on graphs with Condition branches, loops and nested loops."""

from __future__ import annotations

from typing import Any

import pytest

from keeperstate.engine import runner
from keeperstate.engine.context import RunContext
from keeperstate.engine.offers import reference_options
from keeperstate.engine.scope import Scope
from keeperstate.engine.validation import validate_graph

pytestmark = pytest.mark.django_db


def trigger() -> dict[str, Any]:
    config = {"triggerType": "Manual", "sampleInput": {"x": 1}}
    return {"id": "trigger", "type": "trigger", "data": {"label": "trigger", "type": "trigger", "config": config}}


def action(node_id: str, config: dict[str, Any]) -> dict[str, Any]:
    return {"id": node_id, "type": "action", "data": {"label": node_id, "type": "action", "config": config}}


def fields(node_id: str) -> dict[str, Any]:
    return action(node_id, {"actionType": "Set Fields", "fields": [{"name": "v", "expression": "1"}]})


def condition(node_id: str, outcome: bool) -> dict[str, Any]:
    return action(node_id, {"actionType": "Condition", "condition": "true" if outcome else "false"})


def each(node_id: str) -> dict[str, Any]:
    return action(node_id, {"actionType": "For Each", "items": "[1, 2]"})


def edge(source: str, target: str, handle: str | None = None) -> dict[str, Any]:
    found = {"id": f"{source}-{target}", "source": source, "target": target}
    return {**found, "sourceHandle": handle} if handle else found


# Each graph with, for some of its nodes, what runs before them, written out by hand.
BRANCHES = (
    [trigger(), fields("a"), condition("c", True), fields("t1"), fields("t2"), fields("f1"), fields("join"),
     fields("side"), fields("end")],
    [edge("trigger", "a"), edge("a", "c"), edge("c", "t1", "true"), edge("t1", "t2"), edge("c", "f1", "false"),
     edge("t2", "join"), edge("f1", "join"), edge("join", "end"), edge("trigger", "side")],
    {"join": {"trigger", "a", "c", "t1", "t2", "f1"}, "f1": {"trigger", "a", "c"}, "side": {"trigger"}},
)
LOOP = (
    [trigger(), fields("prep"), each("loop"), condition("b1", True), fields("b2"), fields("b3"), fields("after"),
     fields("end")],
    [edge("trigger", "prep"), edge("prep", "loop"), edge("loop", "b1", "each"), edge("b1", "b2", "true"),
     edge("b1", "b3", "false"), edge("loop", "after", "done"), edge("after", "end")],
    {"b2": {"trigger", "prep", "loop", "b1"}, "after": {"trigger", "prep", "loop", "b1", "b2", "b3"},
     "end": {"trigger", "prep", "loop", "b1", "b2", "b3", "after"}},
)
NESTED = (
    [trigger(), each("outer"), fields("o1"), each("inner"), fields("i1"), condition("i2", False), fields("i3"),
     fields("o2"), fields("after")],
    [edge("trigger", "outer"), edge("outer", "o1", "each"), edge("o1", "inner"), edge("inner", "i1", "each"),
     edge("i1", "i2"), edge("i2", "i3", "true"), edge("inner", "o2", "done"), edge("outer", "after", "done")],
    {"i2": {"trigger", "outer", "o1", "inner", "i1"}, "o2": {"trigger", "outer", "o1", "inner", "i1", "i2", "i3"},
     "after": {"trigger", "outer", "o1", "inner", "i1", "i2", "i3", "o2"}},
)
LOOPS_IN_A_ROW = (
    [trigger(), each("first"), fields("a1"), each("second"), fields("a2"), fields("z")],
    [edge("trigger", "first"), edge("first", "a1", "each"), edge("first", "second", "done"),
     edge("second", "a2", "each"), edge("second", "z", "done")],
    {"a2": {"trigger", "first", "a1", "second"}, "z": {"trigger", "first", "a1", "second", "a2"}},
)
GRAPHS = {"branches": BRANCHES, "loop": LOOP, "nested loops": NESTED, "loops in a row": LOOPS_IN_A_ROW}


def offered(nodes: list[dict[str, Any]], edges: list[dict[str, Any]], node_id: str) -> set[str]:
    return {s["nodeId"] for s in reference_options(nodes, edges, node_id)["sources"]} - {"__system"}


def _probed(node: dict[str, Any], tokens: list[str]) -> dict[str, Any]:
    """The node with a reference to each token in its expression field."""
    config = dict(node["data"]["config"])
    if config["actionType"] == "Set Fields":
        config["fields"] = [*config["fields"], *({"name": f"p{i}", "expression": t} for i, t in enumerate(tokens))]
    elif config["actionType"] == "Condition":
        config["condition"] = " and ".join(f"{t} == 1" for t in tokens)
    else:
        config["items"] = f"[{', '.join(tokens)}]"
    return {**node, "data": {**node["data"], "config": config}}


def accepted(nodes: list[dict[str, Any]], edges: list[dict[str, Any]], node_id: str) -> set[str]:
    """The nodes the validator lets node_id reference: all but those it refuses as not running before."""
    others = [n["id"] for n in nodes if n["id"] != node_id]
    tokens = {other: f"<<@{other}:{other}.v>>" for other in others}
    probed = [_probed(n, list(tokens.values())) if n["id"] == node_id else n for n in nodes]
    refusals = [f.message for f in validate_graph(probed, edges).errors
                if f.node_id == node_id and f.code == "REFERENCE_NOT_UPSTREAM"]
    return {other for other, token in tokens.items() if not any(m.startswith(token + " ") for m in refusals)}


def settled_at_each_start(nodes: list[dict[str, Any]], edges: list[dict[str, Any]], monkeypatch) -> (
    tuple[list[tuple[str, set[str]]], set[str]]
):
    """(node, the nodes whose results its references could read) each time the runner starts a
    node, and the nodes with a result (run or skipped) when the run ends."""
    starts: list[tuple[str, set[str]]] = []
    original = runner.run_node

    def recording(graph, node_id, results, labels, ctx):
        starts.append((node_id, set(results)))
        return original(graph, node_id, results, labels, ctx)

    with monkeypatch.context() as patched:
        patched.setattr(runner, "run_node", recording)
        outcome = runner.run_graph(nodes, edges, {"x": 1}, RunContext())
    assert outcome.ok, outcome.error
    return starts, set(outcome.results)


def disagreements(nodes: list[dict[str, Any]], edges: list[dict[str, Any]], expected: dict[str, set[str]],
                  monkeypatch) -> list[str]:
    assert validate_graph(nodes, edges).valid, validate_graph(nodes, edges).as_dict()
    found = []
    before = {}
    for node in nodes:
        node_id = node["id"]
        before[node_id] = set() if node["type"] == "trigger" else accepted(nodes, edges, node_id)
        if (offers := offered(nodes, edges, node_id)) != before[node_id]:
            found.append(f"{node_id}: offered {sorted(offers)}, the validator accepts {sorted(before[node_id])}")
        if node_id in expected and before[node_id] != expected[node_id]:
            found.append(f"{node_id}: the validator accepts {sorted(before[node_id])}, not {sorted(expected[node_id])}")
    starts, ended = settled_at_each_start(nodes, edges, monkeypatch)
    if unsettled := {n["id"] for n in nodes} - ended:
        found.append(f"the run ended with {sorted(unsettled)} neither run nor skipped")
    for node_id, settled in starts:
        if missing := before[node_id] - settled:
            found.append(f"{node_id} started before {sorted(missing)} settled")
    return found


@pytest.mark.parametrize("name", GRAPHS)
def test_the_offers_the_validator_and_the_runner_agree_on_what_runs_before(name, monkeypatch):
    nodes, edges, expected = GRAPHS[name]

    assert disagreements(nodes, edges, expected, monkeypatch) == []


def test_the_check_sees_offers_that_forget_the_loops_done_before(monkeypatch):
    # given: offers that list the upstream nodes only, not the bodies of the loops done before
    monkeypatch.setattr(Scope, "sources", Scope.upstream)
    nodes, edges, expected = LOOP

    assert "after: offered ['loop', 'prep', 'trigger'], the validator accepts " \
        "['b1', 'b2', 'b3', 'loop', 'prep', 'trigger']" in disagreements(nodes, edges, expected, monkeypatch)


def test_the_check_sees_a_loop_rule_the_runner_does_not_keep(monkeypatch):
    # given: offers and validator that count every loop not holding a node as done before it
    monkeypatch.setattr(Scope, "loops_done_before",
                        lambda scope, node_id: [loop for loop, body in scope.bodies.items() if node_id not in body])
    nodes, edges, expected = LOOPS_IN_A_ROW

    assert "a1 started before ['a2'] settled" in disagreements(nodes, edges, {}, monkeypatch)


def test_the_check_sees_a_runner_that_walks_a_level_out_of_order(monkeypatch):
    # given: a runner that walks each level in reverse: a node meets its inputs unsettled
    original = Scope.level
    monkeypatch.setattr(Scope, "level", lambda scope, loop: original(scope, loop)[::-1])
    nodes, edges, expected = NESTED

    found = disagreements(nodes, edges, expected, monkeypatch)

    assert any(d.startswith("the run ended with ['after'") for d in found), found
