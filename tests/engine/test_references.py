"""Reference parsing and resolution (DESIGN.md §3)."""

from __future__ import annotations

import pytest

from keeperstate.engine.fields import ConfigField
from keeperstate.engine.references import (
    BoundExpression,
    Resolver,
    TemplateUnresolved,
    find_references,
    parse_path,
    split_label_path,
)

SYSTEM = {"unixTimestamp": 1700000000, "unixTimestampMs": 1700000000123, "isoTimestamp": "2023-11-14T22:13:20Z"}


def resolver(results=None, labels=None) -> Resolver:
    results = results or {
        "get": {"success": True, "data": {"exists": True, "value": {"items": [{"id": 7}], "n": None}, "version": 3}},
        "trigger": {"success": True, "data": {"block": 100, "name": "main"}},
        "skipped": {"skipped": True},
        "failed": {"success": False, "code": "X", "error": "boom"},
    }
    labels = labels or {"get": "State Get", "trigger": "Trigger", "skipped": "S", "failed": "F", "later": "L"}
    return Resolver(results=results, labels=labels, system=SYSTEM)


def test_whole_field_reference_keeps_its_type():
    resolved = resolver().resolve_config({"v": "<<@get:State Get.version>>", "b": "<<@get:State Get.exists>>"})

    assert resolved == {"v": 3, "b": True}


def test_whole_field_reference_to_an_object_stays_an_object():
    assert resolver().resolve_config({"v": "<<@get:State Get.value>>"})["v"] == {"items": [{"id": 7}], "n": None}


def test_reference_inside_text_is_interpolated():
    resolved = resolver().resolve_config({"k": "block-<<@trigger:Trigger.block>>/<<@get:State Get.value.items>>"})

    assert resolved == {"k": 'block-100/[{"id":7}]'}


def test_list_index_in_path():
    assert resolver().resolve_config({"k": "<<@get:State Get.value.items[0].id>>"}) == {"k": 7}


def test_field_holding_null_resolves_to_null():
    assert resolver().resolve_config({"k": "<<@get:State Get.value.n>>"}) == {"k": None}


def test_label_with_dots_is_split_by_the_nodes_current_label():
    results = {"n1": {"success": True, "data": {"version": 9}}}
    labels = {"n1": "Read v1.2 cursor"}

    resolved = resolver(results, labels).resolve_config({"k": "<<@n1:Read v1.2 cursor.version>>"})

    assert resolved == {"k": 9}


def test_renamed_node_still_resolves_by_id():
    results = {"n1": {"success": True, "data": {"version": 9}}}

    resolved = resolver(results, {"n1": "New name"}).resolve_config({"k": "<<@n1:Old name.version>>"})

    assert resolved == {"k": 9}


def test_system_builtins():
    config = {"t": "<<@__system:System.unixTimestamp>>", "s": "at <<@__system:System.isoTimestamp>>"}

    resolved = resolver().resolve_config(config)

    assert resolved == {"t": 1700000000, "s": "at 2023-11-14T22:13:20Z"}


@pytest.mark.parametrize(
    ("token", "reason"),
    [
        ("<<@nope:Nope.x>>", "there is no node 'nope'"),
        ("<<@later:L.x>>", "has not run"),
        ("<<@skipped:S.x>>", "was skipped"),
        ("<<@failed:F.x>>", "failed"),
        ("<<@get:State Get.missing>>", "no field 'missing'"),
        ("<<@get:State Get.value.items[5]>>", "no item [5]"),
        ("<<@__system:System.nope>>", "no field"),
        ("<<@get:State Get>>", "not a field path"),
    ],
)
def test_unresolvable_reference_names_token_and_reason(token, reason):
    with pytest.raises(TemplateUnresolved) as info:
        resolver().resolve_config({"key": token})

    assert info.value.code == "TEMPLATE_UNRESOLVED"
    assert token in info.value.message
    assert reason in info.value.message
    assert info.value.details["unresolved"][0]["token"] == token


def test_every_unresolved_reference_is_reported():
    with pytest.raises(TemplateUnresolved) as info:
        resolver().resolve_config({"a": "<<@x:X.a>>", "b": "<<@y:Y.b>> text"})

    assert [u["token"] for u in info.value.details["unresolved"]] == ["<<@x:X.a>>", "<<@y:Y.b>>"]


def fields_of(kinds):
    """Config fields of these kinds: each resolves its own value (keeperstate.engine.fields)."""
    return [ConfigField(name, name, kind) for name, kind in kinds.items()]


def test_json_field_text_is_coerced_but_a_single_reference_keeps_its_type():
    results = {"t": {"success": True, "data": {"text": "4219", "num": 4219}}}
    r = resolver(results, {"t": "Trigger"})

    resolved = r.resolve_config(
        {
            "a": "<<@t:Trigger.text>>",
            "b": "<<@t:Trigger.num>>",
            "c": "4219",
            "d": "n=<<@t:Trigger.num>>",
            "e": "<<@t:Trigger.num>>0",
        },
        fields_of({"a": "json", "b": "json", "c": "json", "d": "json", "e": "json"}),
    )

    assert resolved == {"a": "4219", "b": 4219, "c": 4219, "d": "n=4219", "e": 42190}


def test_expression_fields_bind_references_as_typed_names():
    resolved = resolver().resolve_config(
        {"condition": "<<@trigger:Trigger.block>> > <<@get:State Get.version>>"}, fields_of({"condition": "expression"})
    )

    bound = resolved["condition"]
    assert isinstance(bound, BoundExpression)
    assert bound.bindings == {"__ref0": 100, "__ref1": 3}
    assert "__ref0" in bound.text
    assert "<<@" not in bound.text


def test_parse_path_and_split():
    assert parse_path("items[0].id") == ["items", 0, "id"]
    assert parse_path("a..b") is None
    assert parse_path("items[٣]") is None  # an index is ASCII digits, though int() reads "٣" as 3
    assert split_label_path("My.Label.field", "My.Label") == ("My.Label", "field")
    assert split_label_path("Label.a.b", None) == ("Label", "a.b")
    assert [r.node_id for r in find_references("<<@a:A.x>> and <<@b:B.y>>")] == ["a", "b"]
