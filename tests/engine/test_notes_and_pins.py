"""Sticky notes live in a workflow's nodes and are no part of its graph: the validator and the
runner ignore them (an edge to one is refused, and so is text Postgres cannot store). Pinned data
is validated as what it stands in for: a node's output object."""

from __future__ import annotations

import pytest

from keeperstate.engine.context import RunContext
from keeperstate.engine.runner import run_graph
from keeperstate.engine.validation import validate_graph
from tests.executions.graphs import counter_graph

NOTE = {"id": "note-1", "type": "note", "position": {"x": 300, "y": 0},
        "data": {"label": "Note", "type": "note", "text": "Head is pinned while building; unpin before activating."}}


def codes(report):
    return [(f.node_id, f.code) for f in report.errors]


def test_a_note_is_ignored_by_the_validator_and_kept_in_the_nodes():
    nodes, edges = counter_graph()

    report = validate_graph([*nodes, NOTE], edges)

    assert report.valid
    assert report.warnings == []  # not "unreachable", not "unknown action"
    assert NOTE in report.nodes


@pytest.mark.django_db
def test_a_note_is_ignored_by_the_runner():
    nodes, edges = counter_graph()
    outcome = run_graph([*nodes, NOTE], edges, {}, RunContext())

    assert set(outcome.results) == {"trigger", "count"}


def test_an_edge_to_a_note_is_refused():
    nodes, edges = counter_graph()

    report = validate_graph([*nodes, NOTE], [*edges, {"id": "e2", "source": "count", "target": "note-1"}])

    assert codes(report) == [("note-1", "WORKFLOW_INVALID")]
    assert "sticky note" in report.errors[0].message


def test_a_note_with_a_nul_character_is_refused():
    nodes, edges = counter_graph()
    note = {**NOTE, "data": {**NOTE["data"], "text": "a\u0000b"}}

    assert codes(validate_graph([*nodes, note], edges)) == [("note-1", "INVALID_TEXT")]


def test_a_note_may_not_share_an_id_with_a_node():
    nodes, edges = counter_graph()

    assert codes(validate_graph([*nodes, {**NOTE, "id": "count"}], edges)) == [("count", "WORKFLOW_INVALID")]


def test_pinned_data_is_an_object():
    nodes, edges = counter_graph()
    nodes[1]["data"]["pinnedData"] = [1, 2]

    report = validate_graph(nodes, edges)

    assert codes(report) == [("count", "PINNED_DATA_INVALID")]
    assert report.errors[0].field == "pinnedData"


def test_pinned_data_of_a_node_validates():
    nodes, edges = counter_graph()
    nodes[1]["data"]["pinnedData"] = {"value": 4, "version": 4, "created": False}

    assert validate_graph(nodes, edges).valid


def test_a_for_each_cannot_be_pinned():
    nodes, edges = counter_graph()
    nodes[1]["data"]["config"] = {"actionType": "For Each", "items": "range(1, 3)"}
    nodes[1]["data"]["pinnedData"] = {"count": 3}

    assert codes(validate_graph(nodes, edges)) == [("count", "PINNED_DATA_INVALID")]
