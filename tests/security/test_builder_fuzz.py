"""Property: random JSON-like bodies posted to the editor's endpoints (the builder's and the API's) never
draw a 5xx.

Bodies mix well-formed graphs with hostile leaves (NaN, infinities, huge integers, control and
invisible characters, lone surrogates as escapes, deep nesting) and raw bytes that are not JSON.
"""

from __future__ import annotations

import json

import pytest
from django.test import Client
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

pytestmark = pytest.mark.django_db

# (method, path): the builder's own, and the API calls the editor makes with its session.
ENDPOINTS = [
    ("post", "/api/workflows/references/"),
    ("patch", "/api/workflows/{wf}/"),
    ("post", "/api/workflows/validate/"),
    ("post", "/api/workflows/{wf}/execute/"),
    ("post", "/builder/forms/State%20Set/"),
    ("post", "/builder/forms/trigger/Manual/"),
]
FIELDS = ["name", "nodes", "edges", "nodeId", "input", "key", "value", "ttl", "expectedVersion", "sampleInput",
          "id", "data", "label", "config", "actionType", "triggerType", "source", "target", "sourceHandle"]

texts = st.one_of(
    st.sampled_from(["", " ", "trigger", "State Set", "Manual", "cursor", "<<@trigger:Trigger.block>>", "\u200b",
                     "\u202e", "\u2028", "a\x00b", "NaN", "Infinity", "1e400", "{", "[]", "{\"a\":1}"]),
    st.text(max_size=12),
)
leaves = st.one_of(
    st.none(),
    st.booleans(),
    st.integers(min_value=-(2**70), max_value=2**70),
    st.floats(allow_nan=True, allow_infinity=True),
    texts,
)
keys = st.one_of(st.sampled_from(FIELDS), st.text(max_size=6))
values = st.recursive(
    leaves,
    lambda children: st.one_of(st.lists(children, max_size=4), st.dictionaries(keys, children, max_size=5)),
    max_leaves=25,
)
bodies = st.dictionaries(keys, values, max_size=8)


def encode(body) -> bytes:
    # allow_nan: NaN and Infinity reach the server as the bare words a hostile client would send;
    # ensure_ascii: lone surrogates travel as \\udxxx escapes.
    return json.dumps(body, allow_nan=True).encode()


@pytest.mark.parametrize(("method", "path"), ENDPOINTS)
@settings(max_examples=40, deadline=None, derandomize=True, suppress_health_check=[HealthCheck.function_scoped_fixture])
@given(body=st.one_of(bodies.map(encode), st.binary(max_size=40)))
def test_random_bodies_never_draw_a_5xx(user, monitor, method, path, body):
    client = Client()
    client.force_login(user)

    response = getattr(client, method)(path.format(wf=monitor.id), body, content_type="application/json")

    assert response.status_code < 500, (body[:200], response.content[:300])
