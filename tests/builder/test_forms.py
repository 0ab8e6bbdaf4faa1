"""Config forms from the registry: references kept as typed, numbers judged like the validator."""

from __future__ import annotations

import html
import json
import re
from urllib.parse import quote, urlencode

import pytest

from builder.forms import ConfigForm, spec_for_action
from keeperstate.engine.registry import all_actions
from keeperstate.engine.validation import validate_graph
from tests.builder.fragments import judged

pytestmark = pytest.mark.django_db

GET_VERSION = "<<@state-get-1:State Get.version>>"
STATE_SET = "/builder/forms/State%20Set/"


def post_json(client, url, data):
    return client.post(url, data=json.dumps(data), content_type="application/json")


def spec(action_id):
    found = spec_for_action(action_id)
    assert found is not None, action_id
    return found


def state_set(**fields):
    return {"key": "cursor", "value": "1", **fields}


# --- rendering --------------------------------------------------------------------------


def test_state_set_form_renders_reference_capable_text_inputs(client_as_alice):
    response = client_as_alice.get(STATE_SET)
    page = response.content.decode()

    assert response.status_code == 200
    for name in ("key", "ttl", "expectedVersion"):
        tag = re.search(rf'<input type="text" name="{name}"[^>]*>', page)
        assert tag is not None, name
        assert 'data-references="true"' in tag[0]
        assert f'aria-describedby="cfg-{name}-help"' in tag[0]
    value = re.search(r'<textarea name="value"[^>]*>', page)
    assert value is not None
    assert 'data-references="true"' in value[0]
    assert 'type="number"' not in page
    assert "pattern=" not in page


def test_expected_version_sits_in_the_advanced_section(client_as_alice):
    page = client_as_alice.get(STATE_SET).content.decode()

    details = page[page.index('<details class="advanced"'):page.index("</details>")]
    assert 'name="expectedVersion"' in details
    assert 'name="ttl"' not in details
    assert "<summary>Advanced</summary>" in details


@pytest.mark.parametrize("action", [a.id for a in all_actions()])
def test_every_action_form_has_each_registry_field_with_its_help(client_as_alice, action):
    page = client_as_alice.get(f"/builder/forms/{quote(action)}/").content.decode()

    for config_field in spec(action).fields:
        assert f'name="{config_field.name}"' in page
        assert html.escape(config_field.help) in page


def test_help_texts_say_what_numeric_fields_accept(client_as_alice):
    page = client_as_alice.get(STATE_SET).content.decode()

    assert "whole number" in page
    assert "@ reference" in page


def test_initial_values_from_the_query_string_keep_references(client_as_alice):
    query = urlencode({"key": "cursor", "expectedVersion": GET_VERSION, "ttl": "<<@trigger:Trigger.ttl>>"})
    page = client_as_alice.get(f"{STATE_SET}?{query}").content.decode()

    assert f'value="{html.escape(GET_VERSION)}"' in page
    assert f'value="{html.escape("<<@trigger:Trigger.ttl>>")}"' in page
    assert "<details class=\"advanced\" open>" in page


def test_initial_values_from_a_saved_node(client_as_alice, monitor):
    page = client_as_alice.get(f"{STATE_SET}?workflow={monitor.id}&node=state-set-1").content.decode()

    assert 'value="cursor"' in page
    assert f'value="{html.escape(GET_VERSION)}"' in page
    assert html.escape("<<@trigger:Trigger.block>>") in page


def test_a_saved_node_of_another_organization_is_not_found(client_as_alice, foreign_workflow):
    response = client_as_alice.get(f"{STATE_SET}?workflow={foreign_workflow.id}&node=state-set-1")

    assert response.status_code == 404


def test_unknown_action_is_not_found(client_as_alice):
    assert client_as_alice.get("/builder/forms/No%20Such%20Action/").status_code == 404


def test_forms_require_login(client):
    assert client.get(STATE_SET).status_code == 302
    assert post_json(client, STATE_SET, state_set()).status_code == 401


# --- POST: normalised config or field errors -------------------------------------------


@pytest.mark.parametrize("field", ["ttl", "expectedVersion"])
@pytest.mark.parametrize(
    "raw",
    ["12abc", "-1", "1.5", "<<@a:A.x>><<@b:B.y>>", "<<@a:A.x>> <<@b:B.y>>", "v<<@a:A.x>>", "abc", "1e3"],
)
def test_numeric_fields_refuse_anything_but_an_integer_or_one_reference(client_as_alice, field, raw):
    response = post_json(client_as_alice, STATE_SET, state_set(**{field: raw}))

    assert response.status_code == 400
    body = judged(response)
    assert body["valid"] is False
    assert list(body["errors"]) == [field]
    assert body["errors"][field][0]["message"]


@pytest.mark.parametrize(
    ("field", "raw", "expected"),
    [
        ("ttl", "3600", 3600),
        ("ttl", " 60 ", 60),
        ("ttl", "<<@trigger:Trigger.ttl>>", "<<@trigger:Trigger.ttl>>"),
        ("expectedVersion", "0", 0),
        ("expectedVersion", "12", 12),
        ("expectedVersion", GET_VERSION, GET_VERSION),
        ("expectedVersion", f"  {GET_VERSION} ", GET_VERSION),
    ],
)
def test_numeric_fields_take_an_integer_literal_or_one_reference(client_as_alice, field, raw, expected):
    response = post_json(client_as_alice, STATE_SET, state_set(**{field: raw}))

    assert response.status_code == 200, judged(response)
    # the value's text "1" is stored as the number it means (typed once, when parsed)
    expected_config = {"actionType": "State Set", **state_set(value=1), field: expected}
    assert judged(response) == {"valid": True, "config": expected_config}


def test_references_are_kept_exactly_as_typed_in_key_and_value(client_as_alice):
    config = {"key": "cursor-<<@trigger:Trigger.chain>>", "value": '{"block": <<@trigger:Trigger.block>>}'}

    response = post_json(client_as_alice, STATE_SET, config)

    assert judged(response)["config"] == {"actionType": "State Set", **config}


@pytest.mark.parametrize(
    ("text", "stored"),
    [('{"a": 1}', {"a": 1}), ("4219", 4219), ("true", True), ('"4219"', '"4219"'), ("007", "007"), ("hello", "hello")],
)
def test_value_text_is_stored_as_the_json_it_means(client_as_alice, text, stored):
    # typed once, by the field's parser: JSON text as that JSON; text that means text stays as
    # typed, so '"4219"' (quoted) is read as the text 4219 when the run uses it
    response = post_json(client_as_alice, STATE_SET, state_set(value=text))

    assert judged(response)["config"]["value"] == stored


@pytest.mark.parametrize(
    ("config", "field", "code"),
    [
        ({"value": "1"}, "key", "REQUIRED"),
        ({"key": "cursor"}, "value", "REQUIRED"),
        ({"key": "   ", "value": "1"}, "key", "REQUIRED"),
        ({"key": "a\tb", "value": "1"}, "key", "STATE_INVALID_KEY"),
        ({"key": "k", "value": "null"}, "value", "STATE_INVALID_VALUE"),
        ({"key": "k", "value": "x" * 9000}, "value", "STATE_VALUE_TOO_LARGE"),
        ({"key": "k", "value": "<<@trigger:Trigger>>"}, "value", "REFERENCE_INVALID"),
    ],
)
def test_field_errors_carry_the_stable_code(client_as_alice, config, field, code):
    response = post_json(client_as_alice, STATE_SET, config)

    assert response.status_code == 400
    assert judged(response)["errors"][field][0]["code"] == code


def test_html_post_answers_the_form_fragment_with_field_errors(client_as_alice):
    response = client_as_alice.post(STATE_SET, {"key": "cursor", "value": "1", "ttl": "12abc"})
    page = response.content.decode()

    assert response.status_code == 400
    assert '<div class="field has-error" data-field="ttl">' in page
    assert "TTL must be a whole number" in page
    assert 'value="12abc"' in page  # what was typed stays in the field


def test_html_post_of_a_valid_config_carries_the_normalised_config(client_as_alice):
    response = client_as_alice.post(STATE_SET, {"key": "cursor", "value": "1", "expectedVersion": GET_VERSION})
    page = response.content.decode()

    assert response.status_code == 200
    assert 'data-valid="true"' in page
    assert '<script id="normalised-config" type="application/json">' in page
    assert "\\u003C\\u003C@state-get-1:State Get.version\\u003E\\u003E" in page


def test_condition_form_checks_the_expression(client_as_alice):
    url = "/builder/forms/Condition/"
    good = post_json(client_as_alice, url, {"condition": "<<@trigger:Trigger.block>> > 100"})
    bad = post_json(client_as_alice, url, {"condition": "__import__('os')"})

    assert judged(good) == {"valid": True, "config": {"actionType": "Condition",
                                                     "condition": "<<@trigger:Trigger.block>> > 100"}}
    assert bad.status_code == 400
    assert judged(bad)["errors"]["condition"][0]["code"] == "CONDITION_INVALID"


def test_trigger_form_turns_the_sample_input_into_an_object(client_as_alice):
    url = "/builder/forms/trigger/Manual/"
    good = post_json(client_as_alice, url, {"sampleInput": '{"block": 100}'})
    not_object = post_json(client_as_alice, url, {"sampleInput": "[1, 2]"})
    not_json = post_json(client_as_alice, url, {"sampleInput": "{block: 100}"})

    assert judged(good) == {"valid": True, "config": {"triggerType": "Manual", "sampleInput": {"block": 100}}}
    assert judged(not_object)["errors"]["sampleInput"][0]["code"] == "CONFIG_INVALID"
    assert judged(not_json)["errors"]["sampleInput"][0]["code"] == "INVALID_JSON"


def test_trigger_form_renders_the_type_and_sample_input(client_as_alice):
    page = client_as_alice.get("/builder/forms/trigger/Webhook/?sampleInput=%7B%22block%22%3A+1%7D").content.decode()

    assert '<option value="Webhook" selected>Webhook</option>' in page
    assert html.escape('{"block": 1}') in page


# --- forms and validator agree ----------------------------------------------------------


def graph_with(config):
    nodes = [
        {"id": "trigger", "type": "trigger", "data": {"label": "Trigger", "config": {"triggerType": "Manual"}}},
        {"id": "state-get-1", "type": "action", "data": {"label": "State Get",
                                                           "config": {"actionType": "State Get", "key": "k"}}},
        {"id": "state-set-1", "type": "action", "data": {"label": "State Set",
                                                           "config": {"actionType": "State Set", **config}}},
    ]
    edges = [{"id": "e1", "source": "trigger", "target": "state-get-1"},
             {"id": "e2", "source": "state-get-1", "target": "state-set-1"}]
    return nodes, edges


@pytest.mark.parametrize(
    "fields",
    [
        {"ttl": "12abc"}, {"ttl": "0"}, {"ttl": "-5"}, {"ttl": "1.5"}, {"ttl": "10"}, {"ttl": GET_VERSION},
        {"expectedVersion": "-1"}, {"expectedVersion": "0"}, {"expectedVersion": f"{GET_VERSION}{GET_VERSION}"},
        {"expectedVersion": GET_VERSION}, {"expectedVersion": f"x {GET_VERSION}"}, {"value": "null"},
        {"value": ""}, {"key": " "}, {"key": "ok"},
    ],
)
def test_the_form_refuses_exactly_what_the_validator_refuses(fields):
    config = {"key": "cursor", "value": "1", **fields}
    form = ConfigForm(spec("State Set"), data=config)
    report = validate_graph(*graph_with(config))

    form_fields = set(form.errors) if not form.is_valid() else set()
    validator_fields = {e["field"] for e in report.as_dict()["errors"] if e["nodeId"] == "state-set-1"}
    assert form_fields == validator_fields


def test_advanced_section_is_closed_while_it_holds_only_defaults(client_as_alice):
    page = client_as_alice.get(STATE_SET).content.decode()

    assert '<details class="advanced">' in page
