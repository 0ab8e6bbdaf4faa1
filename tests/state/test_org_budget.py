"""The per-organization budget on live keys and stored bytes."""

from __future__ import annotations

import pytest
from django.test import override_settings

from keeperstate.state.errors import StateOrgBudget
from keeperstate.state.selectors import org_usage
from keeperstate.state.store import StateScope, state_get, state_increment, state_set
from tests.factories import make_workflow
from tests.state.test_store import expire

pytestmark = pytest.mark.django_db


@pytest.fixture
def scopes(org):
    workflows = [make_workflow(org, name=f"wf{i}") for i in range(3)]
    return [StateScope(org.id, wf.id) for wf in workflows]


@override_settings(KEEPERSTATE_ORG_MAX_KEYS=5)
def test_org_key_budget_counts_keys_across_workflows(scopes):
    for i in range(5):
        state_set(scope=scopes[i % 3], key=f"k{i}", value=i)

    with pytest.raises(StateOrgBudget) as info:
        state_set(scope=scopes[2], key="one-more", value=1)

    assert info.value.code == "STATE_ORG_BUDGET"
    assert info.value.details == {"limit": "keys", "max": 5, "used": 5}
    assert not state_get(scope=scopes[2], key="one-more").exists


@override_settings(KEEPERSTATE_ORG_MAX_KEYS=5)
def test_org_key_budget_never_blocks_an_overwrite_and_expired_keys_free_room(scopes):
    for i in range(5):
        state_set(scope=scopes[0], key=f"k{i}", value=i, ttl=60)

    assert state_set(scope=scopes[0], key="k1", value="a longer value than before").version == 2
    expire(scopes[0], "k0")
    assert state_set(scope=scopes[1], key="new", value=1).created


@override_settings(KEEPERSTATE_ORG_MAX_BYTES=100)
def test_org_byte_budget_refuses_a_write_that_would_pass_it(scopes):
    state_set(scope=scopes[0], key="a", value="x" * 60)  # 62 bytes stored

    with pytest.raises(StateOrgBudget) as info:
        state_set(scope=scopes[1], key="b", value="y" * 40)  # 42 more: 104

    assert info.value.details["limit"] == "bytes"
    assert not state_get(scope=scopes[1], key="b").exists
    state_set(scope=scopes[1], key="b", value="y" * 36)  # exactly 100
    assert org_usage(scopes[0].organization_id).stored_bytes == 100


@override_settings(KEEPERSTATE_ORG_MAX_BYTES=100)
def test_org_byte_budget_refuses_growth_of_an_existing_key(scopes):
    state_set(scope=scopes[0], key="a", value="x" * 90)

    with pytest.raises(StateOrgBudget):
        state_set(scope=scopes[0], key="a", value="x" * 99)

    assert state_get(scope=scopes[0], key="a").value == "x" * 90
    state_set(scope=scopes[0], key="a", value="short")  # shrinking is always allowed


@override_settings(KEEPERSTATE_ORG_MAX_KEYS=1)
def test_increment_creating_a_key_counts_against_the_budget(scopes):
    state_increment(scope=scopes[0], key="n")

    with pytest.raises(StateOrgBudget):
        state_increment(scope=scopes[1], key="n")
    assert state_increment(scope=scopes[0], key="n").value == 2


def test_other_organizations_do_not_count(scopes, other_org):
    foreign = make_workflow(other_org)
    with override_settings(KEEPERSTATE_ORG_MAX_KEYS=1):
        state_set(scope=scopes[0], key="k", value=1)
        assert state_set(scope=StateScope(other_org.id, foreign.id), key="k", value=1).created


def test_usage_reports_live_keys_and_bytes(scopes):
    state_set(scope=scopes[0], key="a", value={"x": 1})
    state_set(scope=scopes[1], key="b", value=10, ttl=60)
    expire(scopes[1], "b")

    usage = org_usage(scopes[0].organization_id)

    assert (usage.live_keys, usage.stored_bytes) == (1, len('{"x": 1}') + 2)
    assert usage.as_dict() == {"liveKeys": 1, "maxKeys": 10000, "storedBytes": 10, "maxBytes": 52428800}
