"""A reference typed as text ("@body.block"), which a run would send literally, is a warning at
its field; e-mail addresses and real references are not."""

from __future__ import annotations

import pytest

from keeperstate.engine.validation import validate_graph
from keeperstate.workflows.examples import block_monitor_graph


def with_value(value):
    nodes, edges = block_monitor_graph()
    next(n for n in nodes if n["id"] == "state-set-1")["data"]["config"]["value"] = value
    return validate_graph(nodes, edges)


def warnings(report):
    return [(w.node_id, w.field, w.code) for w in report.warnings]


@pytest.mark.parametrize("value", ["@body.block", "block @Trigger.block", '{"b": "@trigger.block"}'])
def test_literal_at_text_looking_like_a_pick_is_flagged(value):
    report = with_value(value)

    assert report.valid
    assert ("state-set-1", "value", "REFERENCE_LITERAL") in warnings(report)
    message = next(w.message for w in report.warnings if w.code == "REFERENCE_LITERAL")
    assert "pick the field from the list" in message


@pytest.mark.parametrize("value", ["ops@example.com", "<<@trigger:Trigger.block>>", "@here", "100"])
def test_ordinary_text_and_real_references_are_not_flagged(value):
    assert "REFERENCE_LITERAL" not in [code for *_, code in warnings(with_value(value))]
