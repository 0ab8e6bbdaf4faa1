"""Generated cases for the classes of input an attacker's probe found (issue 39), each through every
way in it has, with the property the design states (DESIGN.md §8, §13, §15):

* **functions over secrets** — a secret reference wrapped in generated expressions and placed in
  any field but an HTTP Request's URL, headers and body: refused at save on every way in
  (SECRET_NOT_ALLOWED_HERE, nothing stored), and at run for a graph stored unvalidated, with the
  secret's value, in any letter case, in no table;
* **non-UTF-8 and unnormalized keys** — percent-encoded bytes that are not UTF-8 refused with
  STATE_INVALID_KEY and nothing stored; any Unicode spelling of a key stored and found as its NFC
  form, over HTTP and MCP;
* **conditional headers** — generated If-Match / If-None-Match on writes and deletes: a write
  happens exactly when the precondition holds as RFC 9110 reads it (strong comparison; an empty
  or weak If-Match is a 400), otherwise nothing changes;
* **bodies on every POST that takes none** — the schema's POSTs without a request body, sent
  generated bodies: only nothing or {} acts; anything else is refused with a code and changes
  nothing;
* **oversized graphs** — node and edge counts and JSON sizes around the limits (500, 1,000,
  1 MB) through create, update, import, validate and MCP: WORKFLOW_TOO_LARGE exactly past a limit
  (REQUEST_TOO_LARGE past the body limit), nothing stored.
"""

from __future__ import annotations

import json
import unicodedata
from typing import Any
from urllib.parse import quote

import pytest
from django.db import connection
from hypothesis import given
from hypothesis import strategies as st
from rest_framework.test import APIClient

from keeperstate.accounts.tokens import create_token
from keeperstate.core.numbers import whole_number
from keeperstate.core.paths import mark_path
from keeperstate.engine.graph import MAX_EDGES, MAX_GRAPH_BYTES, MAX_NODES
from keeperstate.executions.models import WorkflowExecution
from keeperstate.executions.service import run_workflow
from keeperstate.secrets.store import secret_put
from keeperstate.state.models import WorkflowState
from keeperstate.state.store import state_set
from keeperstate.workflows.models import Workflow, WorkflowVersion
from tests.egress.test_http_request import chain
from tests.factories import make_workflow
from tests.fuzz.counts import CASES
from tests.fuzz.schema import operations
from tests.fuzz.strategies import raw_bodies, values
from tests.security.mcp_in_process import call_tool, token_of

pytestmark = [pytest.mark.fuzz, pytest.mark.django_db]

SECRET_VALUE = "Zq-Secret-7e3C1d9B"
SECRET = "<<@__secrets:Secrets.API_KEY>>"


class _AsServed:
    """The test client's handler behind the WSGI application's marking of the path's bytes."""

    def __init__(self, handler):
        self.handler = handler

    def __getattr__(self, name):
        return getattr(self.handler, name)

    def __call__(self, environ):
        mark_path(environ)
        return self.handler(environ)


@pytest.fixture
def api(user) -> APIClient:
    client = APIClient()
    client.credentials(HTTP_AUTHORIZATION=f"Token {create_token(user, name='fuzz')[1]}")
    client.handler = _AsServed(client.handler)
    return client


@pytest.fixture
def no_throttles(settings):
    rates = settings.REST_FRAMEWORK["DEFAULT_THROTTLE_RATES"]
    settings.REST_FRAMEWORK = {**settings.REST_FRAMEWORK,
                               "DEFAULT_THROTTLE_RATES": dict.fromkeys(rates, "1000000/min")}
    settings.KEEPERSTATE_ORG_RUNS_PER_MINUTE = 10**6


def coded(response) -> dict[str, Any]:
    assert response.status_code < 500, response.content[:300]
    body = response.json()
    assert isinstance(body, dict)
    return body


# --- functions over secrets ----------------------------------------------------------------------

FUNCTIONS_OF_ONE = ["lower({})", "upper({})", "trim({})", "length({})", "text({})", "json({})", "number({})",
                    "{}[0]", "{}[1]", "{} + 'x'", "'x' + {}", "startsWith({}, 'sk')", "contains({}, 'a')",
                    "{} == 'a'", "{} < 'm'", "if(true, {}, 'x')", "coalesce({}, 'x')", "min(length({}), 3)",
                    "not ({} == 'a')", "hex(length({}))", "({})"]
expressions = st.recursive(st.just(SECRET), lambda inner: st.builds(str.format, st.sampled_from(FUNCTIONS_OF_ONE),
                                                                    inner), max_leaves=4)

# (action, field, how the expression or text stands in the config)
PLACES = [
    ("Condition", "condition", lambda e: {"condition": f"{e} == 'x'"}),
    ("Set Fields", "fields", lambda e: {"fields": [{"name": "a", "expression": e}]}),
    ("Set Fields", "fields", lambda e: {"fields": f"a = 1\nb = {e}"}),
    ("For Each", "items", lambda e: {"items": f"range(0, length(text({e})))"}),
    ("State Set", "key", lambda e: {"key": f"k:{SECRET}", "value": 1}),
    ("State Set", "value", lambda e: {"key": "k", "value": SECRET}),
    ("State Get", "key", lambda e: {"key": SECRET}),
    ("State Increment", "by", lambda e: {"key": "k", "by": SECRET}),
    ("State Delete", "key", lambda e: {"key": f"{SECRET}-x"}),
    ("HTTP Request", "query", lambda e: {"url": "https://api.example.com/", "query": {"k": SECRET}}),
    ("HTTP Request", "extra", lambda e: {"url": "https://api.example.com/", "extra": e}),
]
WAYS_TO_SAVE = ["create", "put", "patch", "import", "validate", "mcp-create", "mcp-update", "mcp-validate"]


def save(way: str, api, user, monitor, nodes, edges) -> dict[str, Any]:
    """The answer of one way in, as {code, report} (report: the validation findings)."""
    graph = {"nodes": nodes, "edges": edges}
    if way.startswith("mcp-"):
        tool = {"mcp-create": "create_workflow", "mcp-update": "update_workflow",
                "mcp-validate": "validate_workflow"}[way]
        arguments = {**graph, **({"name": "Fuzzed"} if tool == "create_workflow" else {}),
                     **({"workflowId": str(monitor.id)} if tool == "update_workflow" else {})}
        answer = call_tool(token_of(user), tool, arguments)["answer"]
    else:
        method, url, body = {
            "create": ("POST", "/api/workflows/", {"name": "Fuzzed", **graph}),
            "put": ("PUT", f"/api/workflows/{monitor.id}/", {"name": "Fuzzed", **graph}),
            "patch": ("PATCH", f"/api/workflows/{monitor.id}/", graph),
            "import": ("POST", "/api/workflows/import/", {"name": "Fuzzed", **graph}),
            "validate": ("POST", "/api/workflows/validate/", graph),
        }[way]
        answer = coded(api.generic(method, url, json.dumps(body), content_type="application/json"))
    report = answer if "valid" in answer else answer.get("details", {})
    return {"code": answer.get("code"), "findings": {e["code"] for e in report.get("errors", [])}}


def graph_state(monitor) -> tuple:
    monitor = Workflow.objects.get(pk=monitor.pk)
    return Workflow.objects.count(), WorkflowVersion.objects.count(), monitor.nodes, monitor.edges, monitor.name


def rows_holding(*texts: str) -> dict[str, int]:
    found = {}
    with connection.cursor() as cursor:
        cursor.execute("SELECT tablename FROM pg_tables WHERE schemaname = current_schema()")
        for (table,) in cursor.fetchall():
            for text in texts:
                cursor.execute(f'SELECT count(*) FROM "{table}" t WHERE strpos(t::text, %s) > 0', [text])
                if count := cursor.fetchone()[0]:
                    found[f"{table}:{text}"] = count
    return found


@given(place=st.sampled_from(PLACES), expression=expressions, way=st.sampled_from(WAYS_TO_SAVE))
def test_functions_over_secrets_are_refused_on_every_way_in(api, user, monitor, no_throttles, place, expression,
                                                           way):
    CASES["probe classes: functions over secrets (save)"] += 1
    action, _field, config = place
    nodes, edges = chain(("a", "A", {"actionType": action, **config(expression)}))
    before = graph_state(monitor)

    answer = save(way, api, user, monitor, nodes, edges)

    assert "SECRET_NOT_ALLOWED_HERE" in answer["findings"], answer
    assert graph_state(monitor) == before


@given(place=st.sampled_from(PLACES), expression=expressions)
def test_functions_over_secrets_stored_unvalidated_fail_at_run_and_leave_no_trace(org, user, no_throttles, place,
                                                                                 expression):
    CASES["probe classes: functions over secrets (run)"] += 1
    secret_put(organization=org, name="API_KEY", value=SECRET_VALUE)
    action, _field, config = place
    nodes, edges = chain(("a", "A", {"actionType": action, **config(expression)}))
    workflow = make_workflow(org, user=user, nodes=nodes, edges=edges)

    execution = run_workflow(workflow, {})

    assert execution.node_results["a"]["code"] == "SECRET_NOT_ALLOWED_HERE"
    assert rows_holding(SECRET_VALUE, SECRET_VALUE.lower(), SECRET_VALUE.upper()) == {}


@given(egress=st.sampled_from(["url", "headers", "body"]), way=st.sampled_from(["create", "validate", "mcp-validate"]))
def test_a_secret_in_an_egress_field_is_saved(api, user, monitor, no_throttles, egress, way):
    CASES["probe classes: functions over secrets (egress accepted)"] += 1
    config = {"url": "https://api.example.com/v1", "method": "POST"}
    config[egress] = {"url": f"https://api.example.com/{SECRET}", "headers": {"Authorization": f"Bearer {SECRET}"},
                      "body": f'{{"token": "{SECRET}"}}'}[egress]
    nodes, edges = chain(("call", "Call", {"actionType": "HTTP Request", **config}))

    answer = save(way, api, user, monitor, nodes, edges)

    assert "SECRET_NOT_ALLOWED_HERE" not in answer["findings"]
    assert answer["code"] is None


# --- non-UTF-8 and unnormalized keys -------------------------------------------------------------

def _not_utf8(raw: bytes) -> bool:
    try:
        raw.decode("utf-8")
    except UnicodeDecodeError:
        return True
    return False


bad_bytes = st.one_of(
    st.sampled_from([b"a\xffb", b"\xc0\xaf", b"\xed\xa0\x80", b"\x80", b"caf\xe9", b"\xf8\x88\x80\x80\x80",
                     b"\xe2\x82", b"\xf4\x90\x80\x80"]),
    st.binary(min_size=1, max_size=12).filter(_not_utf8),
)
# Text whose NFC and NFD forms differ: letters with combining marks, Hangul syllables, compatibility
# characters NFC leaves alone (so the key is still distinct from its NFKC form).
PIECES = list("aeiouAEIOUnc") + ["\u0301", "\u0300", "\u0308", "\u0327", "\u0303", "\uac00", "\u1100\u1161",
                                 "\u212b", "\u00c5", "\u1e9b\u0323", "\ufb01"]
decomposable = st.lists(st.sampled_from(PIECES), min_size=1, max_size=8).map("".join)
KEY_CALLS = [("put", ""), ("get", ""), ("delete", ""), ("post", "increment/"), ("get", "history/")]


@given(raw=bad_bytes, prefix=st.sampled_from([b"", b"k-", b"caf"]), call=st.sampled_from(KEY_CALLS))
def test_a_key_whose_bytes_are_not_utf8_is_refused_on_every_state_call(api, workflow, no_throttles, raw, prefix,
                                                                       call):
    CASES["probe classes: non-UTF-8 keys"] += 1
    method, tail = call
    before = list(WorkflowState.objects.values_list("key", "version"))

    response = getattr(api, method)(f"/api/workflows/{workflow.id}/state/{quote(prefix + raw, safe='')}/{tail}",
                                    {"value": 1} if method == "put" else None, format="json")

    body = coded(response)
    assert (response.status_code, body["code"]) == (400, "STATE_INVALID_KEY"), body
    assert list(WorkflowState.objects.values_list("key", "version")) == before


@given(text=decomposable, first=st.sampled_from(["NFC", "NFD", "NFKD"]), second=st.sampled_from(["NFC", "NFD"]),
       way=st.sampled_from(["http", "mcp"]))
def test_every_spelling_of_a_key_is_its_nfc_form(api, user, workflow, scope, no_throttles, text, first, second, way):
    CASES["probe classes: unnormalized keys"] += 1
    one, other = unicodedata.normalize(first, text), unicodedata.normalize(second, text)
    nfc = unicodedata.normalize("NFC", one)
    WorkflowState.objects.filter(workflow_id=workflow.id).delete()

    if way == "http":
        written = coded(api.put(f"/api/workflows/{workflow.id}/state/{quote(one)}/", {"value": 1}, format="json"))
        read = coded(api.get(f"/api/workflows/{workflow.id}/state/{quote(other)}/"))
    else:
        token = token_of(user)
        written = call_tool(token, "set_state", {"workflowId": str(workflow.id), "key": one, "value": 1})["answer"]
        read = call_tool(token, "get_state", {"workflowId": str(workflow.id), "key": other})["answer"]

    assert written["key"] == nfc
    assert list(WorkflowState.objects.filter(workflow_id=workflow.id).values_list("key", flat=True)) == [nfc]
    if unicodedata.normalize("NFC", other) == nfc:
        assert (read["key"], read["value"]) == (nfc, 1)


# --- conditional headers -------------------------------------------------------------------------

def _tag(version: int) -> str:
    return f'"{version}"'


if_match = st.one_of(
    st.sampled_from(["", " ", "*", '""', "W/", 'W/""', "\t", '"1", "2"', "W/*"]),
    st.integers(min_value=-3, max_value=6).map(_tag),
    st.integers(min_value=0, max_value=6).map(lambda v: f"W/{_tag(v)}"),
    st.integers(min_value=0, max_value=6).map(str),
    st.sampled_from(['"9223372036854775808"', '"1e3"', '"٣"', '"0x2"', '"-0"']),
    st.text(st.characters(codec="latin-1", exclude_characters="\r\n\x00"), max_size=10),
)


def precondition(header: str | None, live: int | None) -> str:
    """What RFC 9110 (and design.md §15) make of If-Match against the key's live version:
    'write', 'conflict' (412) or 'refused' (400). A version is a whole number read by the one
    number parser, 0 to 2^63 - 1; the quotes may be left out."""
    if header is None:
        return "write"
    text = header.strip()
    if not text or text.startswith("W/"):
        return "refused"
    if text == "*":
        return "write" if live else "conflict"
    inner = text[1:-1] if len(text) >= 2 and text[0] == text[-1] == '"' else text
    version = whole_number(inner) if "," not in inner else None
    if version is None or not 0 <= version < 2**63:
        return "refused"
    return "write" if version == (live or 0) else "conflict"


@given(header=st.one_of(st.none(), if_match), live=st.one_of(st.none(), st.integers(min_value=1, max_value=4)),
       method=st.sampled_from(["put", "delete"]))
def test_a_write_happens_exactly_when_its_if_match_holds(api, workflow, scope, no_throttles, header, live, method):
    CASES["probe classes: conditional headers"] += 1
    key = f"cursor-{CASES['probe classes: conditional headers']}"  # a new key: its versions start at 1
    for _ in range(live or 0):
        state_set(scope=scope, key=key, value="v")
    before = list(WorkflowState.objects.filter(key=key).values_list("value", "version"))
    headers = {"HTTP_IF_MATCH": header} if header is not None else {}
    url = f"/api/workflows/{workflow.id}/state/{key}/"

    response = api.put(url, {"value": "new"}, format="json", **headers) if method == "put" else api.delete(
        url, **headers)

    expected = precondition(header, live)
    after = list(WorkflowState.objects.filter(key=key).values_list("value", "version"))
    assert response.status_code < 500
    if response.status_code >= 400:
        assert coded(response)["code"] in ("STATE_INVALID_EXPECTED_VERSION", "STATE_VERSION_CONFLICT",
                                           "STATE_KEY_NOT_FOUND")
        assert after == before
    if expected == "refused":
        assert response.status_code == 400, (header, response.content)
    elif expected == "conflict":
        assert response.status_code in ((412, 404) if method == "delete" else (412,)), (header, live, response.content)
    elif method == "put":
        assert response.status_code in (200, 201), (header, live, response.content)
        assert after == [("new", (live or 0) + 1)]
    else:
        assert response.status_code == (204 if live else 404), (header, live, response.content)
        assert after == []


@given(header=st.one_of(if_match, st.sampled_from(["*", " * "])), live=st.booleans())
def test_if_none_match_creates_only(api, workflow, scope, no_throttles, header, live):
    CASES["probe classes: conditional headers"] += 1
    key = f"cursor-{CASES['probe classes: conditional headers']}"
    if live:
        state_set(scope=scope, key=key, value="v")

    response = api.put(f"/api/workflows/{workflow.id}/state/{key}/", {"value": "new"}, format="json",
                       HTTP_IF_NONE_MATCH=header)

    stored = list(WorkflowState.objects.filter(key=key).values_list("value", flat=True))
    if header.strip() != "*":
        assert (response.status_code, coded(response)["code"]) == (400, "BAD_REQUEST")
        assert stored == (["v"] if live else [])
    elif live:
        assert response.status_code == 412
        assert stored == ["v"]
    else:
        assert (response.status_code, stored) == (201, ["new"])


# --- bodies on every POST that takes none --------------------------------------------------------

NO_BODY_POSTS = [path for method, path, operation in operations()
                 if method == "POST" and "requestBody" not in operation and path.startswith("/api/")]


def test_the_schema_names_the_posts_that_take_no_body():
    assert set(NO_BODY_POSTS) == {"/api/workflows/{id}/webhook-secret/",
                                  "/api/workflows/{id}/versions/{number}/restore/", "/api/executions/{id}/retry/"}


def _means_nothing(raw: bytes, content_type: str) -> bool:
    if not raw:
        return True
    if content_type != "application/json":
        return False
    try:
        return json.loads(raw) == {}
    except ValueError:
        return False


bodies = st.one_of(
    raw_bodies.map(lambda raw: (raw, "application/json")),
    st.sampled_from([(b"null", "application/json"), (b"{}", "application/json"), (b"", "application/json"),
                     (b" {\n} ", "application/json"), (b"[]", "application/json"), (b"0", "application/json"),
                     (b'""', "application/json"), (b"x", "text/plain"), (b"a=1", "application/x-www-form-urlencoded"),
                     (b"--b\r\n\r\n--b--", "multipart/form-data; boundary=b"),
                     (b'{"a": "' + b"x" * (3 * 1024 * 1024) + b'"}', "application/json")]),
    values.map(lambda v: (json.dumps(v, allow_nan=True).encode(), "application/json")),
)


@pytest.mark.parametrize("path", NO_BODY_POSTS)
@given(body=bodies)
def test_every_post_that_takes_no_body_acts_only_on_none(api, org, user, monitor, no_throttles, path, body):
    CASES["probe classes: bodies on POSTs that take none"] += 1
    raw, content_type = body
    nodes, edges = chain(("get", "Get", {"actionType": "State Get", "key": "<<@nope:Nope.x>>"}))
    failed = run_workflow(make_workflow(org, user=user, nodes=nodes, edges=edges), {})
    api.patch(f"/api/workflows/{monitor.id}/", {"name": f"Renamed {WorkflowVersion.objects.count()}"}, format="json")
    number = WorkflowVersion.objects.filter(workflow=monitor).order_by("number").first().number
    url = path.format(id=failed.id if path.startswith("/api/executions/") else monitor.id, number=number)
    monitor.refresh_from_db()
    before = (monitor.webhook_secret, monitor.name, WorkflowVersion.objects.count(), WorkflowExecution.objects.count())

    response = api.generic("POST", url, raw, content_type=content_type)

    monitor.refresh_from_db()
    after = (monitor.webhook_secret, monitor.name, WorkflowVersion.objects.count(), WorkflowExecution.objects.count())
    if _means_nothing(raw, content_type):
        assert response.status_code in (200, 201), response.content[:200]
        assert after != before
    else:
        assert response.status_code in (400, 413, 415), (raw[:60], content_type, response.status_code)
        assert coded(response)["code"] in ("PARSE_ERROR", "REQUEST_TOO_LARGE", "UNSUPPORTED_MEDIA_TYPE")
        assert after == before


# --- oversized graphs ----------------------------------------------------------------------------

def fan_out(node_count: int, edge_count: int, label_bytes: int) -> tuple[list, list]:
    """A trigger and node_count - 1 State Gets; edges from the trigger, repeated up to edge_count;
    labels padded so the JSON reaches about label_bytes in all."""
    gets = max(node_count - 1, 1)
    pad = "x" * max(0, label_bytes // gets)
    nodes = [{"id": "trigger", "type": "trigger", "data": {"label": "Trigger", "type": "trigger",
                                                            "config": {"triggerType": "Manual"}}}]
    nodes += [{"id": f"g{i}", "type": "action", "data": {"label": f"G{i}{pad}", "type": "action",
                                                          "config": {"actionType": "State Get", "key": "k"}}}
              for i in range(1, gets + 1)]
    edges = [{"id": f"e{i}", "source": "trigger", "target": f"g{1 + i % gets}"} for i in range(edge_count)]
    return nodes, edges


def size_of(nodes, edges) -> int:
    return len(json.dumps({"nodes": nodes, "edges": edges}, separators=(",", ":"), ensure_ascii=False).encode())


@given(node_count=st.one_of(st.integers(min_value=MAX_NODES - 3, max_value=MAX_NODES + 3),
                            st.integers(min_value=2, max_value=MAX_NODES * 3)),
       edge_count=st.one_of(st.integers(min_value=MAX_EDGES - 3, max_value=MAX_EDGES + 3),
                            st.integers(min_value=1, max_value=MAX_EDGES * 2)),
       label_bytes=st.one_of(st.just(0), st.integers(min_value=MAX_GRAPH_BYTES - 200_000,
                                                      max_value=MAX_GRAPH_BYTES + 200_000)),
       way=st.sampled_from(WAYS_TO_SAVE))
def test_a_graph_past_a_limit_is_refused_on_every_way_in(api, user, monitor, no_throttles, node_count, edge_count,
                                                        label_bytes, way):
    CASES["probe classes: oversized graphs"] += 1
    nodes, edges = fan_out(node_count, edge_count, label_bytes)
    past = len(nodes) > MAX_NODES or len(edges) > MAX_EDGES or size_of(nodes, edges) > MAX_GRAPH_BYTES
    before = graph_state(monitor)

    if way.startswith("mcp-") or size_of(nodes, edges) < 2 * 1024 * 1024:
        answer = save(way, api, user, monitor, nodes, edges)
        too_large = answer["code"] == "WORKFLOW_TOO_LARGE" or "WORKFLOW_TOO_LARGE" in answer["findings"]
    else:  # past the reader's 2.5 MB a body is refused before any service reads it
        response = api.post("/api/workflows/", {"name": "Big", "nodes": nodes, "edges": edges}, format="json")
        too_large = response.status_code == 413 or coded(response).get("code") == "WORKFLOW_TOO_LARGE"

    assert too_large == past, (len(nodes), len(edges), size_of(nodes, edges), way)
    if past:
        assert graph_state(monitor) == before
