"""State actions through the runner's action path: scope from the run, never from config."""

from __future__ import annotations

import pytest

from keeperstate.engine.context import RunContext
from keeperstate.engine.registry import all_actions, get_action
from keeperstate.state.models import WorkflowState
from tests.actions import run_action
from tests.factories import make_workflow

pytestmark = pytest.mark.django_db


@pytest.fixture
def ctx(workflow):
    return RunContext(organization_id=workflow.organization_id, workflow_id=workflow.id)


def test_registry_declares_the_state_actions():
    assert {a.id for a in all_actions()} == {
        "Condition", "State Get", "State Set", "State Delete", "State Increment", "HTTP Request", "Set Fields",
        "For Each", "Stop Loop", "Fail Run",
    }
    assert [f.name for f in get_action("State Get").output_fields] == ["value", "exists", "version", "expiresAt"]
    assert [f.name for f in get_action("State Set").output_fields] == [
        "key", "version", "created", "expiresAt", "conflict", "currentVersion", "currentValue",
    ]
    assert [f.name for f in get_action("State Set").config_fields] == [
        "key", "value", "ttl", "expectedVersion", "onConflict",
    ]
    assert get_action("State Set").config_field("expectedVersion").advanced


STATE_ACTIONS = ["State Get", "State Set", "State Delete", "State Increment"]


@pytest.mark.parametrize("action_id", STATE_ACTIONS)
def test_state_actions_have_no_egress_and_are_not_plan_gated(action_id):
    action = get_action(action_id)
    assert (action.egress, action.plan_gated, action.needs_workflow_context) == ("none", False, True)


def test_set_then_get_through_the_action_path(ctx):
    result, _ = run_action("State Set", {"key": "cursor", "value": "4219"}, ctx)
    got, _ = run_action("State Get", {"key": "cursor"}, ctx)

    assert result == {"success": True, "data": {"key": "cursor", "version": 1, "created": True, "expiresAt": None}}
    assert got["data"]["value"] == 4219


def test_config_naming_another_workflow_or_organization_is_ignored(ctx, workflow, other_org):
    victim = make_workflow(other_org, name="Victim")
    config = {"key": "cursor", "value": "mine", "organizationId": other_org.id, "workflowId": str(victim.id)}

    result, _ = run_action("State Set", config, ctx)

    assert result["success"]
    row = WorkflowState.objects.get()
    assert (row.workflow_id, row.organization_id) == (workflow.id, workflow.organization_id)
    got, _ = run_action("State Get", {"key": "cursor", "workflowId": str(victim.id)}, ctx)
    assert got["data"]["value"] == "mine"


@pytest.mark.parametrize("action_id", STATE_ACTIONS)
def test_state_actions_without_a_workflow_fail_clearly(action_id):
    result, _ = run_action(action_id, {"key": "cursor", "value": "1"}, RunContext())

    assert result["success"] is False
    assert result["code"] == "STATE_NO_WORKFLOW_CONTEXT"
    assert not WorkflowState.objects.exists()


@pytest.mark.parametrize(
    ("config", "code"),
    [
        ({"key": "k", "value": ""}, "STATE_INVALID_VALUE"),
        ({"key": "k", "value": "   "}, "STATE_INVALID_VALUE"),
        ({"key": "k", "value": "null"}, "STATE_INVALID_VALUE"),
        ({"key": "k", "value": None}, "STATE_INVALID_VALUE"),
        ({"key": "k", "value": "a\u0000b"}, "STATE_INVALID_VALUE"),
        ({"key": "k", "value": "NaN"}, "STATE_INVALID_VALUE"),
        ({"key": "", "value": "1"}, "STATE_INVALID_KEY"),
        ({"key": "k", "value": "1", "ttl": "0"}, "STATE_INVALID_TTL"),
        ({"key": "k", "value": "1", "expectedVersion": "-1"}, "STATE_INVALID_EXPECTED_VERSION"),
        ({"key": "k", "value": "x" * 9000}, "STATE_VALUE_TOO_LARGE"),
    ],
)
def test_rejected_inputs_write_nothing(ctx, config, code):
    result, _ = run_action("State Set", config, ctx)

    assert (result["success"], result["code"]) == (False, code)
    assert result["error"]
    assert not WorkflowState.objects.exists()


def test_value_given_as_json_is_stored_as_given(ctx):
    run_action("State Set", {"key": "k", "value": {"a": [1, 2]}}, ctx)
    run_action("State Set", {"key": "n", "value": 12}, ctx)

    assert WorkflowState.objects.get(key="k").value == {"a": [1, 2]}
    assert WorkflowState.objects.get(key="n").value == 12


def test_unknown_action_type_is_a_coded_failure(ctx):
    result, _ = run_action("Nope", {}, ctx)

    assert (result["success"], result["code"]) == (False, "UNKNOWN_ACTION")


def test_condition_routes_by_result(ctx):
    result, handle = run_action("Condition", {"condition": "1 < 2"}, ctx)

    assert (result, handle) == ({"success": True, "data": {"result": True}}, "true")


def test_increment_and_delete_through_the_action_path(ctx):
    first, _ = run_action("State Increment", {"key": "hits"}, ctx)
    second, _ = run_action("State Increment", {"key": "hits", "by": "5"}, ctx)
    deleted, _ = run_action("State Delete", {"key": "hits", "expectedVersion": "2"}, ctx)
    again, _ = run_action("State Delete", {"key": "hits"}, ctx)

    assert first["data"] == {"value": 1, "version": 1, "created": True}
    assert second["data"] == {"value": 6, "version": 2, "created": False}
    assert deleted["data"] == {"deleted": True, "previousVersion": 2}
    assert again["data"] == {"deleted": False, "previousVersion": 0}


def test_increment_of_text_fails_with_invalid_value(ctx):
    run_action("State Set", {"key": "hits", "value": "many"}, ctx)

    result, _ = run_action("State Increment", {"key": "hits"}, ctx)

    assert (result["success"], result["code"]) == (False, "STATE_INVALID_VALUE")


def test_delete_conflict_fails_the_node(ctx):
    run_action("State Set", {"key": "k", "value": "1"}, ctx)

    result, _ = run_action("State Delete", {"key": "k", "expectedVersion": "7"}, ctx)

    assert result["code"] == "STATE_VERSION_CONFLICT"
    assert result["details"] == {"expected": 7, "current": 1}


def test_set_with_branch_on_conflict_succeeds_on_the_conflict_handle(ctx):
    run_action("State Set", {"key": "k", "value": '{"n": 1}'}, ctx)
    run_action("State Set", {"key": "k", "value": '{"n": 2}'}, ctx)

    result, handle = run_action(
        "State Set", {"key": "k", "value": "3", "expectedVersion": "1", "onConflict": "branch"}, ctx
    )

    assert handle == "conflict"
    assert result == {
        "success": True,
        "data": {"key": "k", "version": None, "created": False, "expiresAt": None, "conflict": True,
                 "currentVersion": 2, "currentValue": {"n": 2}},
    }
    assert WorkflowState.objects.get(key="k").value == {"n": 2}


def test_set_with_branch_on_success_follows_the_success_handle(ctx):
    result, handle = run_action("State Set", {"key": "k", "value": "3", "expectedVersion": "0",
                                              "onConflict": "branch"}, ctx)

    assert handle == "success"
    assert result["data"]["conflict"] is False
    assert (result["data"]["currentVersion"], result["data"]["currentValue"]) == (1, 3)


def test_unknown_on_conflict_option_is_refused(ctx):
    result, _ = run_action("State Set", {"key": "k", "value": "3", "onConflict": "retry"}, ctx)

    assert result["code"] == "CONFIG_INVALID"
    assert not WorkflowState.objects.exists()
