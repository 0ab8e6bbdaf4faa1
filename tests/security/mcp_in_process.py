"""``/mcp/`` called in this process through Django's test client: one JSON-RPC exchange per POST
(the server is stateless), for tests that need no gunicorn (tests/mcp runs the real one)."""

from __future__ import annotations

import json
from typing import Any

from django.test import Client

from keeperstate.accounts.tokens import create_token

HEADERS = {"HTTP_ACCEPT": "application/json, text/event-stream", "HTTP_MCP_PROTOCOL_VERSION": "2025-06-18"}


def token_of(user: Any) -> str:
    return create_token(user, name="agent")[1]


def post(token: str | None, body: Any, client: Client | None = None, **headers: Any) -> Any:
    auth = {"HTTP_AUTHORIZATION": f"Bearer {token}"} if token else {}
    return (client or Client()).post("/mcp/", json.dumps(body), content_type="application/json",
                                     **HEADERS, **auth, **headers)


def call_tool(token: str, name: str, arguments: dict[str, Any], **headers: Any) -> Any:
    """The tool's answer: the parsed JSON of its text, with ``isError``."""
    response = post(token, {"jsonrpc": "2.0", "id": 1, "method": "tools/call",
                            "params": {"name": name, "arguments": arguments}}, **headers)
    assert response.status_code == 200, response.content[:300]
    result = response.json()["result"]
    return {"isError": result.get("isError", False), "answer": json.loads(result["content"][0]["text"])}
