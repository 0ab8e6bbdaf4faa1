"""State Delete and State Increment in the store (issue 5)."""

from __future__ import annotations

import pytest

from keeperstate.state.errors import StateInvalidValue, StateKeyLimit, StateVersionConflict
from keeperstate.state.models import WorkflowState
from keeperstate.state.store import state_delete, state_get, state_increment, state_set
from tests.state.test_store import expire

pytestmark = pytest.mark.django_db


def test_delete_a_live_key_reports_its_version(scope):
    state_set(scope=scope, key="k", value=1)
    state_set(scope=scope, key="k", value=2)

    result = state_delete(scope=scope, key="k")

    assert result.as_output() == {"deleted": True, "previousVersion": 2}
    assert not state_get(scope=scope, key="k").exists


def test_delete_an_absent_key_deletes_nothing(scope):
    assert state_delete(scope=scope, key="k").as_output() == {"deleted": False, "previousVersion": 0}


def test_delete_an_expired_key_reports_nothing_deleted(scope):
    state_set(scope=scope, key="k", value=1, ttl=60)
    expire(scope, "k")

    assert state_delete(scope=scope, key="k").deleted is False


def test_delete_with_matching_version(scope):
    state_set(scope=scope, key="k", value=1)

    assert state_delete(scope=scope, key="k", expected_version=1).deleted is True


def test_delete_with_stale_version_conflicts_and_keeps_the_key(scope):
    state_set(scope=scope, key="k", value=1)
    state_set(scope=scope, key="k", value=2)

    with pytest.raises(StateVersionConflict) as info:
        state_delete(scope=scope, key="k", expected_version=1)

    assert info.value.details == {"expected": 1, "current": 2}
    assert state_get(scope=scope, key="k").value == 2


def test_recreated_key_continues_after_the_deleted_version(scope):
    state_set(scope=scope, key="k", value=1)
    state_set(scope=scope, key="k", value=2)
    state_delete(scope=scope, key="k")

    write = state_set(scope=scope, key="k", value=3)

    assert (write.version, write.created) == (3, True)


def test_increment_creates_an_absent_key_at_by(scope):
    result = state_increment(scope=scope, key="n", by=5)

    assert (result.value, result.version, result.created) == (5, 1, True)


def test_increment_adds_to_an_integer(scope):
    state_set(scope=scope, key="n", value=40)

    result = state_increment(scope=scope, key="n", by="2")

    assert (result.value, result.version, result.created) == (42, 2, False)
    assert state_get(scope=scope, key="n").value == 42


def test_increment_defaults_to_one_and_accepts_negative_steps(scope):
    state_increment(scope=scope, key="n")
    state_increment(scope=scope, key="n")

    assert state_increment(scope=scope, key="n", by=-10).value == -8


def test_increment_across_a_digit_boundary_takes_the_locked_path(scope):
    state_set(scope=scope, key="n", value=9)

    result = state_increment(scope=scope, key="n")

    assert (result.value, result.version) == (10, 2)


def test_increment_revives_an_expired_key_from_by(scope):
    state_set(scope=scope, key="n", value=100, ttl=60)
    expire(scope, "n")

    result = state_increment(scope=scope, key="n", by=1)

    assert (result.value, result.created) == (1, True)


@pytest.mark.parametrize("current", ["text", 1.5, {"a": 1}, True, [1]])
def test_increment_of_a_non_integer_fails_and_writes_nothing(scope, current):
    state_set(scope=scope, key="n", value=current)

    with pytest.raises(StateInvalidValue) as info:
        state_increment(scope=scope, key="n")

    assert info.value.code == "STATE_INVALID_VALUE"
    assert state_get(scope=scope, key="n").as_output()["value"] == current
    assert state_get(scope=scope, key="n").version == 1


def test_increment_past_the_safe_integer_range_fails(scope):
    state_set(scope=scope, key="n", value=2**53 - 1)

    with pytest.raises(StateInvalidValue, match="2\\^53"):
        state_increment(scope=scope, key="n")


@pytest.mark.parametrize("by", ["1.5", "x", 1.5, True, 2**60])
def test_increment_by_must_be_a_whole_number(scope, by):
    with pytest.raises(StateInvalidValue):
        state_increment(scope=scope, key="n", by=by)
    assert not WorkflowState.objects.exists()


def test_increment_respects_the_key_ceiling(scope):
    for i in range(100):
        state_set(scope=scope, key=f"k{i}", value=i)

    with pytest.raises(StateKeyLimit):
        state_increment(scope=scope, key="n")
    assert state_increment(scope=scope, key="k5").value == 6


def test_increment_ttl_sets_expiry_afresh(scope):
    assert state_increment(scope=scope, key="n", ttl=60).expires_at is not None
    assert state_increment(scope=scope, key="n").expires_at is None


def test_overwrite_that_grows_the_value_goes_through_and_bumps_once(scope):
    state_set(scope=scope, key="k", value=1)

    write = state_set(scope=scope, key="k", value={"a much": "bigger value"}, expected_version=1)

    assert (write.version, write.created) == (2, False)
    assert state_get(scope=scope, key="k").value == {"a much": "bigger value"}


def test_growing_cas_with_stale_version_conflicts_with_current_value(scope):
    state_set(scope=scope, key="k", value=1)
    state_set(scope=scope, key="k", value=2)

    with pytest.raises(StateVersionConflict) as info:
        state_set(scope=scope, key="k", value="much longer value", expected_version=1)

    assert (info.value.current, info.value.current_value) == (2, 2)
    assert state_get(scope=scope, key="k").value == 2
