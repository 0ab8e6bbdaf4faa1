"""Keys people can read, and the decided treatment of "NaN"/"Infinity" texts and integers past
±2^63 (README, "Decisions where the design is silent")."""

from __future__ import annotations

import pytest

from keeperstate.engine.context import RunContext
from keeperstate.state.errors import StateInvalidExpectedVersion, StateInvalidKey
from keeperstate.state.models import WorkflowState
from keeperstate.state.store import state_get, state_set
from keeperstate.state.values import normalize_key
from tests.actions import run_action

pytestmark = pytest.mark.django_db

UNREADABLE = {
    "zero-width-space (Cf)": "cur\u200bsor",
    "right-to-left-override (Cf)": "\u202ecursor",
    "byte-order-mark (Cf)": "\ufeffcursor",
    "soft-hyphen (Cf)": "cur\u00adsor",
    "line-separator (Zl)": "cur\u2028sor",
    "paragraph-separator (Zp)": "cur\u2029sor",
    "newline (Cc)": "cur\nsor",
    "delete (Cc)": "cur\x7fsor",
    "c1-next-line (Cc)": "cur\x85sor",
    "nul (Cc)": "cur\x00sor",
}


@pytest.mark.parametrize("key", UNREADABLE.values(), ids=UNREADABLE.keys())
def test_a_key_with_an_invisible_or_control_character_is_refused_and_nothing_is_written(scope, key):
    with pytest.raises(StateInvalidKey) as refused:
        state_set(scope=scope, key=key, value=1)

    assert refused.value.code == "STATE_INVALID_KEY"
    assert "U+" in refused.value.message
    assert not WorkflowState.objects.exists()


@pytest.mark.parametrize("key", ["cursor", "Block Höhe", "カーソル", "cursor 🚀", "a b", "ß-é-ñ"])
def test_visible_text_keys_in_any_script_are_accepted(key):
    assert normalize_key(f"  {key} ") == key


def test_an_invisible_key_arriving_through_a_reference_is_refused_at_the_node(workflow):
    ctx = RunContext(organization_id=workflow.organization_id, workflow_id=workflow.id)
    results = {"trigger": {"success": True, "data": {"name": "a\u200bb"}}}

    result, _ = run_action(
        "State Set", {"key": "<<@trigger:Trigger.name>>", "value": 1}, ctx, results=results,
        labels={"trigger": "Trigger"},
    )

    assert result["code"] == "STATE_INVALID_KEY"
    assert not WorkflowState.objects.exists()


@pytest.mark.parametrize("text", ["NaN", "Infinity", "-Infinity"])
def test_nan_text_through_a_whole_field_reference_is_stored_as_text(workflow, scope, text):
    # Decision: a reference keeps its JSON type, and this one is a string; it is data, not a
    # number the user typed, so it is stored as the text it is.
    ctx = RunContext(organization_id=workflow.organization_id, workflow_id=workflow.id)
    results = {"trigger": {"success": True, "data": {"reading": text}}}

    result, _ = run_action(
        "State Set", {"key": "k", "value": "<<@trigger:Trigger.reading>>"}, ctx, results=results,
        labels={"trigger": "Trigger"},
    )

    assert result["success"], result
    assert state_get(scope=scope, key="k").value == text


@pytest.mark.parametrize("text", ["NaN", "Infinity", "-Infinity"])
def test_nan_text_typed_as_a_value_is_refused(workflow, text):
    # Typed text is coerced like JSON, and NaN/Infinity are not finite numbers.
    ctx = RunContext(organization_id=workflow.organization_id, workflow_id=workflow.id)

    result, _ = run_action("State Set", {"key": "k", "value": text}, ctx)

    assert result["code"] == "STATE_INVALID_VALUE"
    assert not WorkflowState.objects.exists()


def test_a_nan_text_key_is_an_ordinary_key(scope):
    assert state_set(scope=scope, key="NaN", value=1).key == "NaN"


@pytest.mark.parametrize("number", [2**63, -(2**63) - 1, 2**100])
def test_integers_past_64_bits_are_stored_and_read_back_exactly(scope, number):
    state_set(scope=scope, key="big", value={"wei": number})

    assert state_get(scope=scope, key="big").value == {"wei": number}


def test_an_integer_key_past_64_bits_becomes_its_exact_text(scope):
    assert state_set(scope=scope, key=2**64, value=1).key == "18446744073709551616"


def test_an_expected_version_past_bigint_is_invalid_not_a_conflict(scope):
    state_set(scope=scope, key="k", value=1)

    with pytest.raises(StateInvalidExpectedVersion):
        state_set(scope=scope, key="k", value=2, expected_version=2**63)


def test_a_ttl_past_64_bits_is_clamped_to_a_year(scope):
    write = state_set(scope=scope, key="k", value=1, ttl=2**64)

    assert write.expires_at is not None
