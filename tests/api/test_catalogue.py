"""GET /api/actions/: the registry, as the API's catalogue (a surface that must not miss an action)."""

from __future__ import annotations

import pytest

from keeperstate.engine.registry import TRIGGERS, all_actions

pytestmark = pytest.mark.django_db


def test_catalogue_lists_every_registered_action_as_the_registry_describes_it(api):
    body = api.get("/api/actions/").json()

    assert body["actions"] == [definition.as_dict() for definition in all_actions()]
    assert {a["id"] for a in body["actions"]} >= {"Condition", "State Get", "State Set"}


def test_catalogue_lists_the_trigger_kinds(api):
    body = api.get("/api/actions/").json()

    assert body["triggers"] == [definition.as_dict() for definition in TRIGGERS.values()]


def test_state_actions_say_they_need_a_workflow_and_send_nothing_out(api):
    actions = {a["id"]: a for a in api.get("/api/actions/").json()["actions"]}

    for state_action in ("State Get", "State Set"):  # and any other state action: see test_execute
        assert actions[state_action]["needsWorkflowContext"] is True
        assert actions[state_action]["egress"] == "none"
        assert actions[state_action]["planGated"] is False
    assert [f["name"] for f in actions["State Get"]["outputFields"]][:4] == ["value", "exists", "version", "expiresAt"]
    assert {"key", "value", "ttl", "expectedVersion"} <= {f["name"] for f in actions["State Set"]["configFields"]}


def test_catalogue_needs_authentication(anonymous):
    assert anonymous.get("/api/actions/").status_code == 401
