"""The MCP server: the SDK's MCPServer with the tools of keeperstate.mcp.tools.

Each tool is synchronous Django code. The SDK would run a sync tool on a worker thread of its
own (another database connection per thread, outside the request); wrapped as a coroutine that
calls ``sync_to_async(thread_sensitive=True)``, it runs back on the request's own thread, which
is waiting in ``async_to_sync`` (keeperstate.mcp.http), with the request's connection and context.

A refusal becomes the tool error of §16: ``isError: true`` whose text is the API's
``{"code", "detail"}`` JSON (plus ``field`` and ``details``), from the same catalogue. Every call
is audited (``mcp.call``: the tool, whether it succeeded, the code of a refusal).
"""

from __future__ import annotations

import functools
import json
from collections.abc import Callable
from typing import Any

from asgiref.sync import sync_to_async
from mcp.server.mcpserver import MCPServer
from mcp.server.mcpserver.exceptions import ToolError
from pydantic import ValidationError

from keeperstate.audit.log import audit
from keeperstate.core.errors import Code, error_body
from keeperstate.core.failures import failure_of
from keeperstate.core.text import has_nul
from keeperstate.mcp.tools import TOOLS, current_caller

INSTRUCTIONS = (
    "KeeperState runs workflows with workflow-scoped key-value state. Read list_actions first; build a graph "
    "of nodes and edges, check it with validate_workflow, save it with create_workflow, switch it on with "
    "update_workflow(active=true), run it with run_workflow and read its state with get_state. A refused call "
    'answers {"code", "detail"} with the API\'s error code.'
)


def refusal(exc: BaseException) -> dict[str, Any]:
    """The API's error body for what a tool raised (keeperstate.core.failures, as the API answers)."""
    return failure_of(exc, where="an MCP tool").body


def bad_arguments(exc: ValidationError) -> dict[str, Any]:
    """Arguments that fail the tool's schema: BAD_REQUEST with the API's field errors in details."""
    fields: dict[str, list[str]] = {}
    for error in exc.errors():
        fields.setdefault(".".join(str(part) for part in error["loc"]) or "arguments", []).append(error["msg"])
    first = next(iter(fields.items()))
    return error_body(Code.BAD_REQUEST, f"Check the arguments: {first[0]}: {first[1][0]}.",
                      details={"fields": fields})


class Refused(ToolError):
    """A tool's refusal, carrying the API's error body."""

    def __init__(self, body: dict[str, Any]):
        super().__init__(json.dumps(body))
        self.body = body


def _on_request_thread(tool: Callable[..., Any]) -> Callable[..., Any]:
    run = sync_to_async(tool, thread_sensitive=True)

    @functools.wraps(tool)
    async def adapter(**arguments: Any) -> Any:
        try:
            return await run(**arguments)
        except Exception as exc:
            raise Refused(await sync_to_async(refusal, thread_sensitive=True)(exc)) from None

    return adapter


MAX_AUDITED_NAME = 100


def _audit(tool: str, code: str | None) -> None:
    # On the request's thread, in its context: the caller and the organization the tool acted in.
    # The name as the caller sent it, made storable (jsonb holds no U+0000) and cut: a refused
    # call's row must be written too.
    caller = current_caller.get()
    name = tool.replace("\x00", "\ufffd")[:MAX_AUDITED_NAME]
    audit("mcp.call", organization=caller.organization_id, actor=caller.user,
          details={"tool": name, "ok": code is None, "code": code, "token": caller.token_name})


class KeeperStateMCP(MCPServer):
    async def call_tool(self, name: str, arguments: dict[str, Any], context: Any = None) -> Any:
        """Every call, the SDK's refusals included, is audited once. The SDK prefixes a tool's error
        with "Error executing tool <name>:"; the text of a refusal is the API's body alone, and the
        SDK's own refusals (an unknown tool, arguments outside the schema) take the API's shape.
        A name or arguments holding U+0000, which no text column can store, are refused first."""
        if has_nul(name) or has_nul(arguments):
            await sync_to_async(_audit, thread_sensitive=True)(name, Code.INVALID_TEXT.name)
            raise Refused(error_body(Code.INVALID_TEXT, "The tool's name or arguments contain the character U+0000, "
                                     "which cannot be stored; remove it."))
        try:
            result = await super().call_tool(name, arguments, context)
        except ToolError as exc:
            refused = _as_refused(self, name, exc)
            await sync_to_async(_audit, thread_sensitive=True)(name, refused.body["code"] if refused else None)
            if refused is None:
                raise
            raise refused from None
        await sync_to_async(_audit, thread_sensitive=True)(name, None)
        return result


def _as_refused(server: KeeperStateMCP, name: str, exc: ToolError) -> Refused | None:
    cause = exc.__cause__
    if isinstance(cause, Refused):
        return Refused(cause.body)
    if isinstance(cause, ValidationError):
        return Refused(bad_arguments(cause))
    if server._tool_manager.get_tool(name) is None:  # the SDK's "Unknown tool"
        return Refused(error_body(Code.NOT_FOUND, f"There is no tool '{name}'; list_tools names them."))
    return None


def build_server() -> KeeperStateMCP:
    server = KeeperStateMCP(name="keeperstate", instructions=INSTRUCTIONS, version="1.0.0",
                            warn_on_duplicate_tools=True)
    for tool in TOOLS:
        server.add_tool(_on_request_thread(tool), name=tool.__name__, description=tool.__doc__,
                        structured_output=False)
    return server


SERVER = build_server()
