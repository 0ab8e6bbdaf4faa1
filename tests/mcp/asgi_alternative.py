"""The alternative ADR 0042 measured against: the SDK's own Starlette app (stateless, JSON answers)
served by uvicorn as ASGI, with the same tools. For the benchmark only: it authenticates nothing
and acts as the user named by KEEPERSTATE_BENCH_USER, so what differs is the transport alone."""

from __future__ import annotations

import os
from typing import Any

import django

os.environ.setdefault("DJANGO_SETTINGS_MODULE", "tests.settings")
django.setup()

from django.contrib.auth import get_user_model  # noqa: E402

from keeperstate.mcp.server import SERVER  # noqa: E402
from keeperstate.mcp.tools import Caller, current_caller  # noqa: E402

_mcp = SERVER.streamable_http_app(streamable_http_path="/mcp/", stateless_http=True, json_response=True)
_user = get_user_model().objects.get(username=os.environ["KEEPERSTATE_BENCH_USER"])


async def app(scope: dict[str, Any], receive: Any, send: Any) -> None:
    if scope["type"] == "http":
        current_caller.set(Caller(user=_user, token_name="bench"))
    await _mcp(scope, receive, send)
