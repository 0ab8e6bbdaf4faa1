"""A shared corpus of bad request bodies, for every endpoint that reads one (API, builder,
webhook). Import it from any suite:

    from tests.security.corpus import BAD_BODIES, BAD_TEXTS, kitchen_sink, assert_refused

``BAD_BODIES`` are refused by the one body reader (keeperstate.core.inputs) before any endpoint sees
them: each names the status and code every endpoint must answer. ``BAD_TEXTS`` parse as JSON but
hold text no name, label, key or stored value may carry; ``kitchen_sink(text)`` places one in
every field an endpoint might read (name, labels, node ids, sample input, run input, keys,
nodeId), so one body probes them all. Those must be a 4xx, never a 5xx, and store nothing.
"""

from __future__ import annotations

import json
from dataclasses import dataclass
from typing import Any

from tests.builder.fragments import judged


@dataclass(frozen=True)
class BadBody:
    name: str
    raw: bytes
    status: int
    code: str
    content_type: str = "application/json"

    def __str__(self) -> str:
        return self.name


def _nested(depth: int) -> bytes:
    return b'{"name": "x", "input": ' + b"[" * depth + b"]" * depth + b"}"


BAD_BODIES: list[BadBody] = [
    BadBody("truncated", b'{"name": ', 400, "PARSE_ERROR"),
    BadBody("not-json", b"name=x&nodes=1", 400, "PARSE_ERROR"),
    BadBody("nan", b'{"name": "x", "input": {"block": NaN}}', 400, "PARSE_ERROR"),
    BadBody("infinity", b'{"name": "x", "input": {"block": Infinity}}', 400, "PARSE_ERROR"),
    BadBody("minus-infinity", b'{"name": "x", "input": {"block": -Infinity}}', 400, "PARSE_ERROR"),
    BadBody("overflow", b'{"name": "x", "input": {"block": 1e400}}', 400, "PARSE_ERROR"),
    BadBody("negative-overflow", b'{"name": "x", "input": {"block": -1e400}}', 400, "PARSE_ERROR"),
    BadBody("lone-high-surrogate", b'{"name": "\\ud800"}', 400, "PARSE_ERROR"),
    BadBody("lone-low-surrogate-in-key", b'{"input": {"\\udfff": 1}}', 400, "PARSE_ERROR"),
    BadBody("surrogate-in-label", b'{"nodes": [{"id": "t", "data": {"label": "a\\udc00"}}]}', 400, "PARSE_ERROR"),
    BadBody("depth-65", _nested(65), 400, "PARSE_ERROR"),
    BadBody("depth-10000", _nested(10_000), 400, "PARSE_ERROR"),
    BadBody("invalid-utf8", b'{"name": "\xff\xfe"}', 400, "PARSE_ERROR"),
    BadBody("utf16-without-charset", '{"name": "x"}'.encode("utf-16"), 400, "PARSE_ERROR"),
    BadBody("unknown-charset", b'{"name": "x"}', 415, "UNSUPPORTED_MEDIA_TYPE", "application/json; charset=klingon"),
    BadBody("form-encoded", b"name=x", 415, "UNSUPPORTED_MEDIA_TYPE", "text/plain"),
]

BAD_TEXTS: dict[str, str] = {
    "nul": "a\x00b",
    "newline": "a\nb",
    "escape": "a\x1bb",
    "c1-control": "a\x85b",
    "zero-width-space": "a\u200bb",
    "right-to-left-override": "a\u202eb",
    "byte-order-mark": "\ufeffab",
    "line-separator": "a\u2028b",
    "paragraph-separator": "a\u2029b",
    "only-invisible": "\u200b\u200b",
}


def kitchen_sink(text: str) -> dict[str, Any]:
    """A body whose every readable field holds ``text``: whichever fields an endpoint reads,
    it reads the bad text."""
    nodes = [
        {
            "id": "trigger",
            "type": "trigger",
            "data": {
                "label": text,
                "type": "trigger",
                "config": {"triggerType": "Manual", "sampleInput": {text: 1, "block": text}},
            },
        },
        {
            "id": f"n{text}",
            "type": "action",
            "data": {"label": text, "type": "action", "config": {"actionType": "State Set", "key": text, "value": 1}},
        },
    ]
    edges = [{"id": "e1", "source": "trigger", "target": f"n{text}"}]
    return {
        "name": text,
        "description": text,
        "nodes": nodes,
        "edges": edges,
        "nodeId": text,
        "input": {"block": text, text: 1},
        "actionType": "State Set",
        "config": {"key": text, "value": 1},
        "key": text,
        "value": text,
        "sampleInput": json.dumps({text: 1}),
    }


def assert_refused(response: Any, case: BadBody) -> None:
    """The coded answer of the one body reader: the API's JSON, or the builder's HTML fragment of it."""
    assert response.status_code == case.status, (case.name, response.status_code, response.content[:300])
    body = response.json() if "json" in response.get("Content-Type", "") else judged(response)
    assert body["code"] == case.code, (case.name, body)
    assert body["detail"], case.name
