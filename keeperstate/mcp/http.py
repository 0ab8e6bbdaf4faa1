"""``/mcp/``: the SDK's Streamable HTTP transport inside the site's WSGI app (ADR 0042).

A DRF view, so an MCP request is authenticated and throttled exactly as an API call is: the
API's token class (knox, hashed tokens) read from DRF's settings, accepting ``Authorization:
Bearer <token>`` (what MCP clients send) as well as the API's ``Token <token>``; the API's
throttles (per token, and per address for calls without valid credentials, the refused ones
counted too); 401/429 in the API's error shape. No session: an agent holds a token.

Before anything else the ``Origin`` header is checked, as the MCP transport requires against DNS
rebinding: a browser page of another site (an Origin that is not this site's own address nor in
CSRF_TRUSTED_ORIGINS) is refused 403 ORIGIN_NOT_ALLOWED; clients that are not browsers send no
Origin and are not affected. The Host itself is Django's ALLOWED_HOSTS check.

The request is then handed, as an ASGI scope, to the SDK's ``StreamableHTTPSessionManager`` in
stateless JSON-response mode: each POST is one JSON-RPC exchange answered with one JSON body, no
session to keep between requests (any gunicorn worker answers any request) and no stream to hold
a WSGI thread. ``async_to_sync`` runs it on an event loop while this thread waits and runs the
tools (keeperstate.mcp.server).
"""

from __future__ import annotations

from typing import Any

from asgiref.sync import async_to_sync
from django.conf import settings
from django.http import HttpResponse, JsonResponse
from mcp.server.streamable_http_manager import StreamableHTTPSessionManager
from rest_framework.renderers import JSONRenderer
from rest_framework.request import Request
from rest_framework.settings import api_settings
from rest_framework.views import APIView

from keeperstate.core.errors import Code, CodedError, error_body
from keeperstate.core.inputs import charset_of, parse_json_body
from keeperstate.mcp.server import SERVER
from keeperstate.mcp.tools import Caller, current_caller


def token_authentication_classes() -> list[Any]:
    """The API's token class, once answering ``Bearer`` (first: it names the WWW-Authenticate
    challenge) and once ``Token``; session authentication is left out."""
    from knox.auth import TokenAuthentication

    classes: list[Any] = []
    configured: list[Any] = list(api_settings.DEFAULT_AUTHENTICATION_CLASSES)  # imported by DRF from settings
    for cls in configured:
        if issubclass(cls, TokenAuthentication):
            bearer = type(f"Bearer{cls.__name__}", (cls,), {"authenticate_header": lambda self, request: "Bearer"})
            classes += [bearer, cls]
    return classes


class McpView(APIView):
    authentication_classes = token_authentication_classes()
    # permission_classes: DRF's default, the API's (AuthenticatedOrCounted, from settings): a call
    # refused for want of credentials counts against its address's anonymous rate.
    parser_classes: list[Any] = []  # the SDK reads the body
    renderer_classes = [JSONRenderer]  # DRF's own answers (401, 429) in the API's shape
    schema = None  # JSON-RPC, not a REST resource: out of the OpenAPI schema (docs/mcp.md describes it)

    def perform_content_negotiation(self, request: Request, force: bool = False) -> tuple[Any, str]:
        # What a client accepts is the SDK's to judge (JSON and/or an event stream); DRF's own
        # answers are JSON.
        return JSONRenderer(), JSONRenderer.media_type

    def initial(self, request: Request, *args: Any, **kwargs: Any) -> None:
        if not origin_allowed(request):
            raise CodedError.of(Code.ORIGIN_NOT_ALLOWED, f"The Origin {request.headers['Origin'][:100]!r} is not this "
                                "site's; /mcp/ answers pages of this site and clients that send no Origin.")
        super().initial(request, *args, **kwargs)

    def post(self, request: Request) -> HttpResponse:
        return self.serve(request)

    def get(self, request: Request) -> HttpResponse:
        # The stream a client may open with GET: a stateless server offers none, and MCP says
        # to answer 405 then (the SDK would hold the thread on an empty stream instead).
        body = error_body(Code.METHOD_NOT_ALLOWED, "This MCP server is stateless: it opens no event stream. "
                          "POST JSON-RPC requests.")
        return JsonResponse(body, status=405, headers={"Allow": "POST, DELETE"})

    def delete(self, request: Request) -> HttpResponse:
        return self.serve(request)

    def serve(self, request: Request) -> HttpResponse:
        raw = request._request.body  # REQUEST_TOO_LARGE (413) past DATA_UPLOAD_MAX_MEMORY_SIZE
        if raw:
            # The one hardened reader refuses first what no part of the service can hold (lone
            # surrogates, NaN, nesting past 64), with the API's PARSE_ERROR / 413 / 415.
            parse_json_body(raw, limit=settings.DATA_UPLOAD_MAX_MEMORY_SIZE, encoding=charset_of(request.content_type))
        token = request.auth
        caller = Caller(user=request.user, token_name=(getattr(token, "name", "") or getattr(token, "token_key", ""))
                        or None)
        reset = current_caller.set(caller)
        try:
            status, headers, body = async_to_sync(exchange)(asgi_scope(request), raw)
        finally:
            current_caller.reset(reset)
        response = HttpResponse(body, status=status)
        for name, value in headers:
            if name.lower() not in ("content-length", "transfer-encoding"):
                response[name] = value
        return response


def origin_allowed(request: Request) -> bool:
    """No Origin (a client that is not a browser), the site's own scheme and host, or one of
    CSRF_TRUSTED_ORIGINS."""
    origin = request.headers.get("Origin")
    if origin is None:
        return True
    own = f"{request._request.scheme}://{request._request.get_host()}"
    given = origin.strip().rstrip("/").lower()
    return given == own.lower() or given in {o.rstrip("/").lower() for o in settings.CSRF_TRUSTED_ORIGINS}


def asgi_scope(request: Request) -> dict[str, Any]:
    http_request = request._request
    headers = [(name.lower().encode("latin-1"), value.encode("latin-1", "replace"))
               for name, value in http_request.headers.items()]
    return {
        "type": "http", "asgi": {"version": "3.0"}, "http_version": "1.1", "method": http_request.method,
        "scheme": http_request.scheme, "path": http_request.path, "raw_path": http_request.path.encode(),
        "query_string": http_request.META.get("QUERY_STRING", "").encode("latin-1"), "root_path": "",
        "headers": headers, "server": (http_request.get_host(), int(http_request.get_port() or 80)), "client": None,
    }


async def exchange(scope: dict[str, Any], body: bytes) -> tuple[int, list[tuple[str, str]], bytes]:
    """One request through a fresh stateless manager (a manager runs once; creating one is cheap)."""
    manager = StreamableHTTPSessionManager(app=SERVER._lowlevel_server, json_response=True, stateless=True)
    sent = False
    started: dict[str, Any] = {}
    chunks: list[bytes] = []

    async def receive() -> dict[str, Any]:
        nonlocal sent
        if sent:
            return {"type": "http.disconnect"}
        sent = True
        return {"type": "http.request", "body": body, "more_body": False}

    async def send(message: dict[str, Any]) -> None:
        if message["type"] == "http.response.start":
            started.update(message)
        elif message["type"] == "http.response.body":
            chunks.append(message.get("body", b""))

    async with manager.run():
        await manager.handle_request(scope, receive, send)  # type: ignore[arg-type]
    headers = [(k.decode("latin-1"), v.decode("latin-1")) for k, v in started.get("headers", [])]
    return started.get("status", 500), headers, b"".join(chunks)
