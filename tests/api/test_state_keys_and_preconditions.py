"""State over HTTP, the edges a probe found (issue 39, item 5): an empty or weak If-Match is a 400,
not an unconditional write; keys are UTF-8 (bytes that are not are refused, not stored as their
percent text) and one key whatever its Unicode spelling (NFC, on every way in)."""

from __future__ import annotations

import unicodedata
from urllib.parse import quote

import pytest

from keeperstate.core.paths import mark_path
from keeperstate.executions.service import run_workflow
from keeperstate.state.models import WorkflowState
from keeperstate.state.store import state_get, state_set
from tests.api.conftest import token_client
from tests.egress.test_http_request import chain
from tests.factories import make_workflow
from tests.security.mcp_in_process import call_tool, token_of

pytestmark = pytest.mark.django_db

NFC = "caf\u00e9"
NFD = "cafe\u0301"


class _AsServed:
    """The test client's handler behind the WSGI application's own marking of the path's bytes
    (keeperstate.wsgi), as gunicorn and runserver serve it; tests/security/test_gunicorn_answers.py
    sends the same keys to a real gunicorn."""

    def __init__(self, handler):
        self.handler = handler

    def __getattr__(self, name):
        return getattr(self.handler, name)

    def __call__(self, environ):
        mark_path(environ)
        return self.handler(environ)


@pytest.fixture
def api(user):
    client = token_client(user)
    client.handler = _AsServed(client.handler)
    return client


def url(workflow, key: str, tail: str = "") -> str:
    return f"/api/workflows/{workflow.id}/state/{key}/{tail}"


def stored(scope) -> list[tuple[str, object, int]]:
    return list(WorkflowState.objects.filter(workflow_id=scope.workflow_id).values_list("key", "value", "version"))


# --- If-Match ------------------------------------------------------------------------------------


@pytest.mark.parametrize("header", ["", " ", '""', 'W/"1"', "W/1"])
def test_an_empty_or_weak_if_match_on_put_is_a_400_and_nothing_is_written(api, workflow, scope, header):
    state_set(scope=scope, key="cursor", value=1)

    response = api.put(url(workflow, "cursor"), {"value": 2}, format="json", HTTP_IF_MATCH=header)

    assert response.status_code == 400
    assert (response.json()["code"], response.json()["field"]) == ("STATE_INVALID_EXPECTED_VERSION", "If-Match")
    assert stored(scope) == [("cursor", 1, 1)]


@pytest.mark.parametrize("header", ["", 'W/"1"'])
def test_an_empty_or_weak_if_match_on_delete_is_a_400_and_the_key_stays(api, workflow, scope, header):
    state_set(scope=scope, key="cursor", value=1)

    response = api.delete(url(workflow, "cursor"), HTTP_IF_MATCH=header)

    assert (response.status_code, response.json()["code"]) == (400, "STATE_INVALID_EXPECTED_VERSION")
    assert stored(scope) == [("cursor", 1, 1)]


def test_a_strong_if_match_still_writes_and_a_stale_one_is_412(api, workflow, scope):
    state_set(scope=scope, key="cursor", value=1)

    written = api.put(url(workflow, "cursor"), {"value": 2}, format="json", HTTP_IF_MATCH='"1"')
    stale = api.put(url(workflow, "cursor"), {"value": 3}, format="json", HTTP_IF_MATCH='"1"')

    assert (written.status_code, written["ETag"]) == (200, '"2"')
    assert (stale.status_code, stale.json()["code"]) == (412, "STATE_VERSION_CONFLICT")
    assert stored(scope) == [("cursor", 2, 2)]


# --- keys that are not UTF-8 ---------------------------------------------------------------------

NOT_UTF8 = ["a%FFb", "%C0%AF", "%ED%A0%80", "%80", "caf%E9"]


@pytest.mark.parametrize("key", NOT_UTF8)
@pytest.mark.parametrize(("method", "tail"), [("get", ""), ("put", ""), ("delete", ""), ("post", "increment/"),
                                              ("get", "history/")])
def test_a_key_that_is_not_utf8_is_refused_and_nothing_is_stored(api, workflow, scope, key, method, tail):
    response = getattr(api, method)(url(workflow, key, tail), {"value": 1} if method == "put" else None,
                                    format="json")

    assert response.status_code == 400, response.content
    assert response.json()["code"] == "STATE_INVALID_KEY"
    assert "UTF-8" in response.json()["detail"]
    assert stored(scope) == []


def test_the_percent_text_itself_is_a_key_of_its_own(api, workflow, scope):
    # "a%FFb" as text (its % sent as %25) is an ordinary key, and the only address of it
    written = api.put(url(workflow, "a%25FFb"), {"value": 1}, format="json")

    assert written.status_code == 201
    assert stored(scope) == [("a%FFb", 1, 1)]
    assert api.get(url(workflow, "a%FFb")).status_code == 400


# --- one key, whatever its Unicode spelling --------------------------------------------------------


def test_nfc_and_nfd_spellings_are_one_key_over_http(api, workflow, scope):
    first = api.put(url(workflow, quote(NFD)), {"value": 1}, format="json")
    second = api.put(url(workflow, quote(NFC)), {"value": 2}, format="json")
    read = api.get(url(workflow, quote(NFD)))

    assert (first.status_code, second.status_code) == (201, 200)
    assert first.json()["key"] == NFC
    assert (read.json()["key"], read.json()["value"], read.json()["version"]) == (NFC, 2, 2)
    assert stored(scope) == [(NFC, 2, 2)]
    assert [e["newVersion"] for e in api.get(url(workflow, quote(NFD), "history/")).json()["results"]] == [2, 1]
    listed = api.get(f"/api/workflows/{workflow.id}/state/", {"prefix": "cafe\u0301"[:5]}).json()["results"]
    assert [r["key"] for r in listed] == [NFC]
    assert api.delete(url(workflow, quote(NFD))).status_code == 204


def test_a_run_writes_and_reads_one_key_whatever_its_spelling(org, user):
    nodes, edges = chain(
        ("set", "Set", {"actionType": "State Set", "key": NFD, "value": 7}),
        ("get", "Get", {"actionType": "State Get", "key": NFC}),
    )
    workflow = make_workflow(org, user=user, nodes=nodes, edges=edges)

    execution = run_workflow(workflow, {})

    assert execution.node_results["get"]["data"]["value"] == 7
    assert list(WorkflowState.objects.values_list("key", flat=True)) == [NFC]


def test_mcp_and_the_store_normalize_the_key_too(user, workflow, scope):
    token = token_of(user)

    written = call_tool(token, "set_state", {"workflowId": str(workflow.id), "key": NFD, "value": 1})
    read = call_tool(token, "get_state", {"workflowId": str(workflow.id), "key": NFC})

    assert written["answer"]["key"] == NFC
    assert read["answer"]["value"] == 1
    assert state_get(scope=scope, key=unicodedata.normalize("NFD", NFC)).value == 1
    assert stored(scope) == [(NFC, 1, 1)]
