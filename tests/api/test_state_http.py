"""State over HTTP, row by row of DESIGN.md §15: list, read with ETag, PUT with If-Match and
If-None-Match, DELETE, increment, history; percent-encoded keys; the store's codes; the actor in
the history and the audit log; permissions and another organization."""

from __future__ import annotations

import pytest

from keeperstate.audit.models import AuditEvent
from keeperstate.executions.service import run_workflow
from keeperstate.state.models import WorkflowState
from keeperstate.state.store import state_set
from tests.api.conftest import token_client

pytestmark = pytest.mark.django_db


def url(workflow, key: str | None = None, tail: str = "") -> str:
    base = f"/api/workflows/{workflow.id}/state/"
    return base if key is None else f"{base}{key}/{tail}"


def put(api, workflow, key, body, **headers):
    return api.put(url(workflow, key), body, format="json", **headers)


# --- GET …/state/ ------------------------------------------------------------------------------


def test_list_shows_live_keys_in_key_order_with_their_metadata(api, workflow, scope):
    state_set(scope=scope, key="b", value=2)
    state_set(scope=scope, key="a", value={"x": 1}, ttl=60)

    response = api.get(url(workflow))

    assert response.status_code == 200
    body = response.json()
    assert [r["key"] for r in body["results"]] == ["a", "b"]
    first = body["results"][0]
    assert set(first) == {"key", "value", "version", "expiresAt", "updatedAt", "updatedByExecution"}
    assert first["value"] == {"x": 1}
    assert first["version"] == 1
    assert first["expiresAt"] is not None
    assert body["next"] is None


def test_list_filters_by_prefix(api, workflow, scope):
    for key in ("feed:eth", "feed:btc", "cursor", "feed%_x"):
        state_set(scope=scope, key=key, value=1)

    assert [r["key"] for r in api.get(url(workflow), {"prefix": "feed:"}).json()["results"]] == ["feed:btc", "feed:eth"]
    # LIKE's wildcards in a prefix are plain characters.
    assert [r["key"] for r in api.get(url(workflow), {"prefix": "feed%_"}).json()["results"]] == ["feed%_x"]


def test_list_pages_with_a_cursor_until_next_is_null(api, workflow, scope):
    keys = [f"k{i:02}" for i in range(7)]
    for key in keys:
        state_set(scope=scope, key=key, value=1)

    seen, link, pages = [], url(workflow) + "?pageSize=3", 0
    while link:
        body = api.get(link).json()
        seen += [r["key"] for r in body["results"]]
        link, pages = body["next"], pages + 1

    assert seen == keys
    assert pages == 3


@pytest.mark.parametrize("query", [{"pageSize": "0"}, {"pageSize": "201"}, {"pageSize": "²"}, {"cursor": "%%%"},
                                   {"cursor": "AA"}, {"prefix": "a\x00"}])
def test_list_refuses_a_bad_page_size_or_cursor_as_a_field_error(api, workflow, query):
    response = api.get(url(workflow), query)

    assert response.status_code == 400
    assert set(response.json()) <= {"pageSize", "cursor", "prefix"}


def test_expired_keys_are_not_listed(api, workflow, scope):
    state_set(scope=scope, key="old", value=1, ttl=1)
    WorkflowState.objects.filter(key="old").update(expires_at="2000-01-01T00:00:00Z")

    assert api.get(url(workflow)).json()["results"] == []


# --- GET …/state/<key>/ ------------------------------------------------------------------------


def test_get_answers_the_key_with_its_version_as_etag(api, workflow, scope):
    state_set(scope=scope, key="cursor", value=41)
    state_set(scope=scope, key="cursor", value=42)

    response = api.get(url(workflow, "cursor"))

    assert response.status_code == 200
    assert response["ETag"] == '"2"'
    assert response.json()["value"] == 42
    assert response.json()["version"] == 2


def test_get_written_by_a_run_names_the_execution(api, monitor):
    execution = run_workflow(monitor, {"block": 5})

    body = api.get(url(monitor, "cursor")).json()

    assert body["updatedByExecution"] == str(execution.id)


def test_get_with_if_none_match_of_the_current_version_is_304(api, workflow, scope):
    state_set(scope=scope, key="cursor", value=1)

    assert api.get(url(workflow, "cursor"), HTTP_IF_NONE_MATCH='"1"').status_code == 304
    assert api.get(url(workflow, "cursor"), HTTP_IF_NONE_MATCH='"0"').status_code == 200


def test_get_of_a_missing_or_expired_key_is_404_state_key_not_found(api, workflow, scope):
    state_set(scope=scope, key="old", value=1, ttl=1)
    WorkflowState.objects.filter(key="old").update(expires_at="2000-01-01T00:00:00Z")

    for key in ("never", "old"):
        response = api.get(url(workflow, key))
        assert response.status_code == 404
        assert response.json()["code"] == "STATE_KEY_NOT_FOUND"


# --- percent-encoded keys ----------------------------------------------------------------------


@pytest.mark.parametrize(
    ("path_key", "key"),
    [("caf%C3%A9", "café"), ("feed%3Aeth", "feed:eth"), ("a%20b", "a b"), ("a%2Fb", "a/b"), ("a/b", "a/b"),
     ("100%25", "100%"), ("q%3Fx%23y", "q?x#y")],
)
def test_a_percent_encoded_key_names_the_decoded_key(api, workflow, path_key, key):
    assert put(api, workflow, path_key, {"value": 1}).status_code == 201

    assert api.get(url(workflow, path_key)).json()["key"] == key
    assert WorkflowState.objects.get(workflow=workflow).key == key


# --- PUT ---------------------------------------------------------------------------------------


def test_put_creates_201_then_overwrites_200_with_etag(api, workflow):
    first = put(api, workflow, "cursor", {"value": 100})
    second = put(api, workflow, "cursor", {"value": 101, "ttl": 60})

    assert first.status_code == 201
    assert first.json() == {"key": "cursor", "version": 1, "created": True, "expiresAt": None}
    assert first["ETag"] == '"1"'
    assert second.status_code == 200
    assert second.json()["version"] == 2
    assert second.json()["created"] is False
    assert second.json()["expiresAt"] is not None
    assert second["ETag"] == '"2"'


def test_put_stores_json_as_given(api, workflow):
    for value in ("4219", 4219, [1, "a"], {"a": None}, True, "x" * 10):
        put(api, workflow, "v", {"value": value})
        assert api.get(url(workflow, "v")).json()["value"] == value


def test_put_with_the_current_if_match_writes(api, workflow):
    put(api, workflow, "cursor", {"value": 1})

    response = put(api, workflow, "cursor", {"value": 2}, HTTP_IF_MATCH='"1"')

    assert response.status_code == 200
    assert response.json()["version"] == 2


def test_put_with_a_stale_if_match_is_412_with_the_current_version_and_writes_nothing(api, workflow):
    put(api, workflow, "cursor", {"value": 1})
    put(api, workflow, "cursor", {"value": 2})

    response = put(api, workflow, "cursor", {"value": 99}, HTTP_IF_MATCH='"1"')

    assert response.status_code == 412
    body = response.json()
    assert body["code"] == "STATE_VERSION_CONFLICT"
    assert body["details"] == {"expected": 1, "current": 2}
    assert response["ETag"] == '"2"'
    assert api.get(url(workflow, "cursor")).json()["value"] == 2


def test_put_with_if_match_on_a_missing_key_is_412_current_0(api, workflow):
    response = put(api, workflow, "cursor", {"value": 1}, HTTP_IF_MATCH='"3"')

    assert response.status_code == 412
    assert response.json()["details"] == {"expected": 3, "current": 0}
    assert not WorkflowState.objects.exists()


def test_put_with_if_match_star_writes_only_a_live_key(api, workflow):
    assert put(api, workflow, "cursor", {"value": 1}, HTTP_IF_MATCH="*").status_code == 412
    put(api, workflow, "cursor", {"value": 1})
    assert put(api, workflow, "cursor", {"value": 2}, HTTP_IF_MATCH="*").status_code == 200


def test_put_with_if_none_match_star_creates_only(api, workflow):
    first = put(api, workflow, "lock", {"value": "me"}, HTTP_IF_NONE_MATCH="*")
    again = put(api, workflow, "lock", {"value": "you"}, HTTP_IF_NONE_MATCH="*")

    assert first.status_code == 201
    assert again.status_code == 412
    assert again.json()["details"] == {"expected": 0, "current": 1}
    assert api.get(url(workflow, "lock")).json()["value"] == "me"


@pytest.mark.parametrize(
    ("headers", "code"),
    [({"HTTP_IF_MATCH": '"x"'}, "STATE_INVALID_EXPECTED_VERSION"),
     ({"HTTP_IF_MATCH": '"-1"'}, "STATE_INVALID_EXPECTED_VERSION"),
     ({"HTTP_IF_MATCH": '"1", "2"'}, "STATE_INVALID_EXPECTED_VERSION"),
     ({"HTTP_IF_NONE_MATCH": '"1"'}, "BAD_REQUEST"),
     ({"HTTP_IF_MATCH": '"1"', "HTTP_IF_NONE_MATCH": "*"}, "BAD_REQUEST")],
)
def test_put_refuses_preconditions_it_cannot_read(api, workflow, headers, code):
    response = put(api, workflow, "cursor", {"value": 1}, **headers)

    assert response.status_code == 400
    assert response.json()["code"] == code


@pytest.mark.parametrize(
    ("key", "body", "status", "code"),
    [("cursor", {"value": None}, 400, "STATE_INVALID_VALUE"),
     ("cursor", {"value": ""}, 400, "STATE_INVALID_VALUE"),
     ("cursor", {"value": "x" * 9000}, 413, "STATE_VALUE_TOO_LARGE"),
     ("cursor", {"value": 1, "ttl": 0}, 400, "STATE_INVALID_TTL"),
     ("cursor", {"value": 1, "ttl": "soon"}, 400, "STATE_INVALID_TTL"),
     ("k" * 257, {"value": 1}, 400, "STATE_INVALID_KEY"),
     ("%E2%80%AE", {"value": 1}, 400, "STATE_INVALID_KEY")],
)
def test_put_answers_the_store_refusal_with_the_actions_code(api, workflow, key, body, status, code):
    response = put(api, workflow, key, body)

    assert response.status_code == status
    assert response.json()["code"] == code
    assert not WorkflowState.objects.exists()


def test_put_without_a_value_is_a_field_error(api, workflow):
    response = put(api, workflow, "cursor", {"ttl": 5})

    assert response.status_code == 400
    assert "value" in response.json()


def test_put_past_the_key_ceiling_is_400_state_key_limit(api, workflow, scope, settings):
    settings.KEEPERSTATE_MAX_KEYS_PER_WORKFLOW = 2
    put(api, workflow, "a", {"value": 1})
    put(api, workflow, "b", {"value": 1})

    response = put(api, workflow, "c", {"value": 1})

    assert response.status_code == 400
    assert response.json()["code"] == "STATE_KEY_LIMIT"
    assert put(api, workflow, "a", {"value": 2}).status_code == 200  # an overwrite never fails on it


# --- DELETE ------------------------------------------------------------------------------------


def test_delete_is_204_then_404(api, workflow):
    put(api, workflow, "cursor", {"value": 1})

    assert api.delete(url(workflow, "cursor")).status_code == 204
    second = api.delete(url(workflow, "cursor"))
    assert second.status_code == 404
    assert second.json()["code"] == "STATE_KEY_NOT_FOUND"


def test_delete_with_a_stale_if_match_is_412_and_keeps_the_key(api, workflow):
    put(api, workflow, "cursor", {"value": 1})
    put(api, workflow, "cursor", {"value": 2})

    response = api.delete(url(workflow, "cursor"), HTTP_IF_MATCH='"1"')

    assert response.status_code == 412
    assert response.json()["details"] == {"expected": 1, "current": 2}
    assert api.delete(url(workflow, "cursor"), HTTP_IF_MATCH='"2"').status_code == 204


def test_a_deleted_keys_version_is_not_reused(api, workflow):
    put(api, workflow, "cursor", {"value": 1})
    api.delete(url(workflow, "cursor"))

    assert put(api, workflow, "cursor", {"value": 1}).json()["version"] == 2


# --- POST …/increment/ -------------------------------------------------------------------------


def test_increment_creates_then_adds(api, workflow):
    first = api.post(url(workflow, "alerts", "increment/"), {}, format="json")
    second = api.post(url(workflow, "alerts", "increment/"), {"by": 5, "ttl": 60}, format="json")

    assert first.status_code == 201
    assert first.json() == {"key": "alerts", "value": 1, "version": 1, "created": True}
    assert second.status_code == 200
    assert second.json() == {"key": "alerts", "value": 6, "version": 2, "created": False}


def test_increment_of_text_is_state_invalid_value(api, workflow):
    put(api, workflow, "name", {"value": "bob"})

    response = api.post(url(workflow, "name", "increment/"), {"by": 1}, format="json")

    assert response.status_code == 400
    assert response.json()["code"] == "STATE_INVALID_VALUE"


# --- GET …/history/ ----------------------------------------------------------------------------


def test_history_is_newest_first_and_names_the_user_and_token(user, workflow, monitor):
    api = token_client(user)  # the token is named "tests"
    put(api, workflow, "cursor", {"value": 1})
    put(api, workflow, "cursor", {"value": 2}, HTTP_IF_MATCH='"1"')
    api.post(url(workflow, "cursor", "increment/"), {}, format="json")
    api.delete(url(workflow, "cursor"))

    events = api.get(url(workflow, "cursor", "history/")).json()["results"]

    assert [e["operation"] for e in events] == ["delete", "update", "update", "insert"]
    assert [e["newVersion"] for e in events] == [None, 3, 2, 1]
    assert events[1]["oldValue"] == 2
    assert events[1]["newValue"] == 3
    assert {e["actor"] for e in events} == {"api:alice (token tests)"}
    assert all(e["execution"] is None for e in events)
    assert set(events[0]) == {"operation", "oldValue", "newValue", "oldVersion", "newVersion", "execution", "actor",
                              "at"}


def test_history_of_a_runs_write_names_the_execution_not_an_actor(api, monitor):
    execution = run_workflow(monitor, {"block": 5})

    event = api.get(url(monitor, "cursor", "history/")).json()["results"][0]

    assert event["execution"] == str(execution.id)
    assert event["actor"] is None


def test_a_session_write_names_the_user_without_a_token(client_as_alice, workflow):
    client_as_alice.put(url(workflow, "cursor"), {"value": 1}, content_type="application/json")

    events = client_as_alice.get(url(workflow, "cursor", "history/")).json()["results"]

    assert events[0]["actor"] == "api:alice"


# --- audit -------------------------------------------------------------------------------------


def test_every_write_is_audited_with_the_user_key_and_version(api, workflow):
    put(api, workflow, "cursor", {"value": 1})
    api.post(url(workflow, "cursor", "increment/"), {}, format="json")
    api.delete(url(workflow, "cursor"))
    put(api, workflow, "cursor", {"value": 1}, HTTP_IF_MATCH='"9"')  # refused: not audited

    rows = list(AuditEvent.objects.filter(action__startswith="state.").order_by("id"))

    assert [(r.action, r.details["version"]) for r in rows] == [("state.set", 1), ("state.increment", 2),
                                                                  ("state.delete", 2)]
    assert {r.actor_name for r in rows} == {"alice"}
    assert {r.organization_id for r in rows} == {workflow.organization_id}
    assert rows[0].details["key"] == "cursor"
    assert rows[0].details["via"] == "api"
    assert rows[0].details["token"] == "tests"


# --- who may -----------------------------------------------------------------------------------


def test_a_member_reads_and_writes(api, workflow):
    # alice is a plain member: every role may change the workflow (§9), so every role writes.
    assert put(api, workflow, "cursor", {"value": 1}).status_code == 201
    assert api.get(url(workflow, "cursor")).status_code == 200


@pytest.mark.parametrize(
    ("method", "tail", "body"),
    [("get", "", None), ("get", "cursor/", None), ("put", "cursor/", {"value": 1}), ("delete", "cursor/", None),
     ("post", "cursor/increment/", {}), ("get", "cursor/history/", None)],
)
def test_another_organizations_workflow_is_404_and_untouched(api, foreign_workflow, method, tail, body):
    run_workflow(foreign_workflow, {"block": 7})
    before = list(WorkflowState.objects.filter(workflow=foreign_workflow).values_list("key", "value", "version"))

    response = getattr(api, method)(url(foreign_workflow) + tail, body, format="json")

    assert response.status_code == 404
    assert response.json() == {"code": "NOT_FOUND", "detail": "No such workflow."}
    after = list(WorkflowState.objects.filter(workflow=foreign_workflow).values_list("key", "value", "version"))
    assert after == before


def test_without_credentials_is_401(anonymous, workflow):
    assert anonymous.get(url(workflow)).status_code == 401


def test_a_session_write_needs_the_csrf_token(csrf_client, workflow):
    response = csrf_client.put(url(workflow, "cursor"), {"value": 1}, content_type="application/json")

    assert response.status_code == 403
    assert response.json()["code"] == "CSRF_FAILED"


def test_state_calls_are_throttled_like_the_api(api, workflow, settings):
    rates = dict(settings.REST_FRAMEWORK["DEFAULT_THROTTLE_RATES"], api_user="3/min")
    settings.REST_FRAMEWORK = {**settings.REST_FRAMEWORK, "DEFAULT_THROTTLE_RATES": rates}

    statuses = [api.get(url(workflow)).status_code for _ in range(4)]

    assert statuses == [200, 200, 200, 429]

