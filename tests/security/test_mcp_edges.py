"""``/mcp/``'s edges a probe found (issue 39, items 4 and 6), in this process through Django's test
client: anonymous calls throttled like the API's, the Origin checked against DNS rebinding, and a
NUL in a tool's name or arguments answered with a code (never driver text) with its audit row kept."""

from __future__ import annotations

import json

import pytest

from keeperstate.audit.models import AuditEvent
from tests.security.mcp_in_process import call_tool, post, token_of

pytestmark = pytest.mark.django_db

LIST = {"jsonrpc": "2.0", "id": 1, "method": "tools/list", "params": {}}


@pytest.fixture
def anon_rate(settings):
    """3 a minute for calls without credentials and for failed authentications, per address (the
    API's api_anon and auth_failure rates)."""
    settings.REST_FRAMEWORK = {**settings.REST_FRAMEWORK, "DEFAULT_THROTTLE_RATES": {
        **settings.REST_FRAMEWORK["DEFAULT_THROTTLE_RATES"], "api_anon": "3/min", "auth_failure": "3/min"}}


# --- 6. throttled without credentials ------------------------------------------------------------


@pytest.mark.usefixtures("anon_rate")
@pytest.mark.parametrize("authorization", [None, "Bearer ks_" + "0" * 64, "Bearer not-a-token"])
def test_calls_without_valid_credentials_are_throttled_per_address(authorization):
    headers = {"HTTP_AUTHORIZATION": authorization} if authorization else {}

    answers = [post(None, LIST, REMOTE_ADDR="10.3.9.1", **headers) for _ in range(5)]

    assert [a.status_code for a in answers] == [401, 401, 401, 429, 429]
    assert answers[-1].json()["code"] == "THROTTLED"
    assert int(answers[-1]["Retry-After"]) >= 1
    assert post(None, LIST, REMOTE_ADDR="10.3.9.2", **headers).status_code == 401  # another address


@pytest.mark.usefixtures("anon_rate")
def test_a_token_holder_is_not_throttled_by_the_anonymous_rate(user):
    token = token_of(user)

    assert [post(token, LIST, REMOTE_ADDR="10.3.9.3").status_code for _ in range(5)] == [200] * 5


# --- 6. Origin ----------------------------------------------------------------------------------


@pytest.mark.parametrize("origin", ["http://evil.example", "null", "http://testserver.evil.example",
                                    "https://testserver", "http://testserver:8080"])
def test_a_foreign_origin_is_refused_403_even_with_a_token(user, origin):
    response = post(token_of(user), LIST, HTTP_ORIGIN=origin)

    assert response.status_code == 403
    assert response.json()["code"] == "ORIGIN_NOT_ALLOWED"
    assert not AuditEvent.objects.filter(action="mcp.call").exists()


@pytest.mark.parametrize("origin", [None, "http://testserver", "http://TESTSERVER/", "https://agents.example"])
def test_no_origin_the_sites_own_or_a_trusted_one_is_served(user, settings, origin):
    settings.CSRF_TRUSTED_ORIGINS = ["https://agents.example"]
    headers = {"HTTP_ORIGIN": origin} if origin else {}

    response = post(token_of(user), LIST, **headers)

    assert response.status_code == 200
    assert "list_workflows" in {tool["name"] for tool in response.json()["result"]["tools"]}


# --- 4. NUL in a tool's name or arguments ----------------------------------------------------------


@pytest.mark.parametrize(("name", "arguments"), [
    ("get\x00workflow", {}),
    ("\x00", {}),
    ("list_workflows", {"organization": "acme\x00"}),
    ("get_workflow", {"workflowId\x00": "x"}),
    ("validate_workflow", {"nodes": [{"id": "a\x00"}], "edges": []}),
])
def test_nul_in_a_tool_call_is_a_coded_refusal_and_the_call_is_audited(user, name, arguments):
    called = call_tool(token_of(user), name, arguments)

    assert called["isError"] is True
    assert called["answer"]["code"] == "INVALID_TEXT"
    assert "DETAIL" not in json.dumps(called["answer"])
    assert "portal" not in json.dumps(called["answer"])
    row = AuditEvent.objects.get(action="mcp.call")
    assert row.details["tool"] == name.replace("\x00", "\ufffd")
    assert (row.details["ok"], row.details["code"]) == (False, "INVALID_TEXT")
