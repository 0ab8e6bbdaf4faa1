"""HTTP Request: call an outside service and hand its answer to later nodes (DESIGN.md §12).

The action only shapes the request and the answer; egress rules, redirects, the deadline and
the byte ceiling live in ``keeperstate.egress.request``. Every text field takes references and
is checked again after resolution, since a reference can produce anything.

With ``jsonRpc`` (DESIGN.md §14) the body is one JSON-RPC 2.0 request, completed with
``"jsonrpc": "2.0"`` and an ``id`` and sent as a POST; the answer's ``result`` is handed over as
``data.result`` too, and a JSON-RPC ``error`` (which servers send with HTTP 200) fails the node
with ``HTTP_RPC_ERROR`` unless Fail on error is off.
"""

from __future__ import annotations

import json
import logging
import re
from typing import Any

import httpx

from keeperstate.core.errors import Code, CodedError
from keeperstate.core.numbers import parse_whole_number
from keeperstate.egress.request import (
    HttpResponseNotJson,
    OutboundRequest,
    as_text,
    excerpt,
    is_json_type,
    parse_json,
    send,
)
from keeperstate.engine.context import RunContext
from keeperstate.engine.fields import ConfigField, ConfigInvalid
from keeperstate.engine.registry import ActionDefinition, OutputField, register

logger = logging.getLogger(__name__)

METHODS = ("GET", "POST", "PUT", "PATCH", "DELETE")
RESPONSE_TYPES = ("auto", "json", "text")
MAX_TIMEOUT = 30
DEFAULT_TIMEOUT = 10
_HEADER_NAME_RE = re.compile(r"^[!#$%&'*+\-.^_`|~0-9A-Za-z]+$")
# Headers the client computes itself; letting a workflow set them would desynchronise the message.
_RESERVED_HEADERS = {"host", "content-length", "transfer-encoding", "connection"}


JSON_RPC_VERSION = "2.0"
JSON_RPC_ID = 1  # one request per node: any id will do, and a fixed one keeps runs comparable


class HttpStatus(CodedError):
    error = Code.HTTP_STATUS


class HttpRpcError(CodedError):
    error = Code.HTTP_RPC_ERROR


def check_url(value: Any) -> str:
    text = value.strip() if isinstance(value, str) else ""
    try:
        url = httpx.URL(text)
    except (httpx.InvalidURL, TypeError) as exc:
        raise ConfigInvalid(f"URL {text!r} is not a valid URL: {exc}.", field="url") from exc
    if url.scheme not in ("http", "https") or not url.host:
        raise ConfigInvalid(
            "URL must be an http:// or https:// address with a host, e.g. https://api.example.com/blocks/latest.",
            field="url",
        )
    return text


def check_method(value: Any) -> str:
    method = (value or "GET").upper() if isinstance(value, str) or value is None else value
    if method not in METHODS:
        raise ConfigInvalid(f"Method must be one of {', '.join(METHODS)} (got {value!r}).", field="method")
    return str(method)


def check_response_type(value: Any) -> str:
    kind = value or "auto"
    if kind not in RESPONSE_TYPES:
        raise ConfigInvalid(f"Response type must be one of {', '.join(RESPONSE_TYPES)}.", field="responseType")
    return str(kind)


def check_timeout(value: Any) -> int:
    if value is None or value == "":
        return DEFAULT_TIMEOUT
    return parse_whole_number(
        value, field="timeout", minimum=1, maximum=MAX_TIMEOUT, error=ConfigInvalid,
        message=f"Timeout is a whole number of seconds from 1 to {MAX_TIMEOUT} (got {value!r}).",
    )


def _flag(value: Any, *, default: bool, field: str, label: str) -> bool:
    if value is None or value == "":
        return default
    if isinstance(value, bool):
        return value
    if isinstance(value, str) and value.strip().lower() in ("true", "false"):
        return value.strip().lower() == "true"
    raise ConfigInvalid(f"{label} is true or false.", field=field)


def check_fail_on_error(value: Any) -> bool:
    return _flag(value, default=True, field="failOnError", label="Fail on error")


def check_json_rpc(value: Any) -> bool:
    return _flag(value, default=False, field="jsonRpc", label="JSON-RPC")


def _pairs(value: Any, field: str, label: str) -> dict[str, str]:
    """A name → text object; reference values that resolved to other JSON become their text."""
    if value is None or value == "":
        return {}
    if isinstance(value, str):
        try:
            value = json.loads(value)
        except ValueError:
            value = None
    if not isinstance(value, dict):
        raise ConfigInvalid(f'{label} is an object of name → text, e.g. {{"Accept": "application/json"}}.', field=field)
    out = {}
    for name, raw in value.items():
        text = raw if isinstance(raw, str) else json.dumps(raw, separators=(",", ":"), ensure_ascii=False)
        if any(c in text for c in "\r\n\x00"):
            raise ConfigInvalid(f"{label} '{name}' contains a line break; give it one line of text.", field=field)
        out[str(name)] = text
    return out


def check_headers(value: Any) -> dict[str, str]:
    headers = _pairs(value, "headers", "Header")
    for name in headers:
        if not _HEADER_NAME_RE.match(name):
            raise ConfigInvalid(f"'{name}' is not a valid header name (letters, digits and - only).", field="headers")
        if name.lower() in _RESERVED_HEADERS:
            raise ConfigInvalid(f"The {name} header is set by the client; remove it.", field="headers")
    return headers


def check_query(value: Any) -> dict[str, str]:
    query = _pairs(value, "query", "Query parameter")
    if any(not name for name in query):
        raise ConfigInvalid("A query parameter needs a name.", field="query")
    return query


def _body(value: Any, headers: dict[str, str]) -> bytes | None:
    if value is None or value == "":
        return None
    has_type = any(name.lower() == "content-type" for name in headers)
    if isinstance(value, str):
        if not has_type:
            headers["Content-Type"] = "text/plain; charset=utf-8"
        return value.encode("utf-8")
    if not has_type:
        headers["Content-Type"] = "application/json"
    return json.dumps(value, separators=(",", ":"), ensure_ascii=False).encode("utf-8")


def json_rpc_request(value: Any) -> dict[str, Any]:
    """The body as one JSON-RPC 2.0 request: ``jsonrpc`` and ``id`` added where it lacks them."""
    if isinstance(value, str):
        try:
            value = json.loads(value)
        except ValueError:
            value = None
    if not isinstance(value, dict) or not isinstance(value.get("method"), str) or not value["method"].strip():
        raise ConfigInvalid(
            'With JSON-RPC on, the body is one request object with a method, e.g. {"method": "eth_blockNumber", '
            '"params": []}.',
            field="body",
        )
    return {"jsonrpc": JSON_RPC_VERSION, "id": JSON_RPC_ID, **value}


def run_http_request(config: dict[str, Any], ctx: RunContext) -> dict[str, Any]:
    json_rpc = check_json_rpc(config.get("jsonRpc"))
    # JSON-RPC over HTTP is a POST, whatever the method field (whose form always holds one) says.
    method = "POST" if json_rpc else check_method(config.get("method"))
    headers = check_headers(config.get("headers"))
    response_type = check_response_type(config.get("responseType"))
    timeout = check_timeout(config.get("timeout"))
    fail_on_error = check_fail_on_error(config.get("failOnError"))
    raw_body = json_rpc_request(config.get("body")) if json_rpc else config.get("body")
    content = _body(raw_body, headers)
    url = check_url(config.get("url"))
    host = httpx.URL(url).host
    try:
        answer = send(OutboundRequest(method=method, url=url, headers=headers, query=check_query(config.get("query")),
                                      content=content, timeout=float(timeout)))
    except CodedError as exc:
        # One line per refused or failed request, naming its run: an operator finds what a run
        # could not reach (an egress block included) without opening the execution.
        logger.warning("HTTP Request %s %s failed: %s %s (%s)", method, host, exc.code, exc.message, ctx.where())
        raise
    logger.info("HTTP Request %s %s → %s in %d ms (%s)", method, host, answer.status, answer.duration_ms, ctx.where())
    if json_rpc:
        # An RPC answer is JSON whatever its content type says; what is not stays text.
        body = _parse_body(answer.content, answer.encoding, "application/json", "auto")
    else:
        body = _parse_body(answer.content, answer.encoding, answer.content_type, response_type)
    ok = 200 <= answer.status < 300
    if json_rpc and fail_on_error:
        _raise_rpc_error(body, answer.status)
    if not ok and fail_on_error:
        shown = excerpt(body if isinstance(body, str) else json.dumps(body, ensure_ascii=False))
        raise HttpStatus(
            f"The server answered {answer.status} {answer.reason}"
            + (f": {shown}" if shown else "")
            + ". Check the URL and the request; turn off Fail on error to handle this answer in the workflow.",
            details={"status": answer.status, "body": shown},
        )
    data = {
        "status": answer.status, "ok": ok, "headers": answer.headers, "body": body, "durationMs": answer.duration_ms,
    }
    if json_rpc:
        data["result"] = body.get("result") if isinstance(body, dict) else None
    return data


def _raise_rpc_error(body: Any, status: int) -> None:
    """Fail on a JSON-RPC ``error`` (it says more than the HTTP status a server may add to it), or,
    on a 2xx answer, on an answer that is no JSON-RPC response at all."""
    # A JSON-RPC error is an object (code, message, data); {"error": "…"} is some other server's answer.
    error = body.get("error") if isinstance(body, dict) else None
    if isinstance(error, dict):
        code, message = error.get("code"), error.get("message")
        text = message if isinstance(message, str) else json.dumps(message, ensure_ascii=False)
        which = "an error" if code is None else f"error {code}"
        raise HttpRpcError(
            f"The JSON-RPC server answered {which}: {excerpt(text)}. Check the method and its params; "
            "turn off Fail on error to handle the error in the workflow (body.error).",
            details={"code": code, "message": message, "data": error.get("data")},
        )
    if 200 <= status < 300 and not (isinstance(body, dict) and "result" in body):
        shown = excerpt(body if isinstance(body, str) else json.dumps(body, ensure_ascii=False))
        raise HttpRpcError(
            f"The answer is not a JSON-RPC response (no result and no error): {shown or 'an empty body'}. "
            "Check that the URL is the node's JSON-RPC endpoint.",
            details={"code": None, "message": "not a JSON-RPC response", "data": shown},
        )


def _parse_body(content: bytes, encoding: str, content_type: str, response_type: str) -> Any:
    if response_type == "text":
        return as_text(content, encoding)
    if response_type == "json":
        if not content.strip():
            return None
        try:
            return parse_json(content, encoding)
        except ValueError as exc:
            raise HttpResponseNotJson(
                f"The answer is not JSON ({excerpt(as_text(content, encoding))}). Set Response type to text or auto.",
                details={"contentType": content_type},
            ) from exc
    if is_json_type(content_type) and content.strip():
        try:
            return parse_json(content, encoding)
        except ValueError:
            pass  # a server that says JSON and sends something else: hand over the text
    return as_text(content, encoding)


HTTP_REQUEST = register(
    ActionDefinition(
        id="HTTP Request",
        label="HTTP Request",
        group="Network",
        description="Call a URL (an API, an RPC node, a webhook) and use its answer in later nodes.",
        icon="http-request",
        egress="user",
        config_fields=(
            ConfigField("method", "Method", "select", accepts_references=False, choices=METHODS,
                        default="GET", help="The HTTP method (default GET); a JSON-RPC request is always a POST.",
                        check=check_method),
            ConfigField("url", "URL", "text", required=True, secrets=True,
                        help="The http(s) address to call; type @ to build it from earlier nodes or a secret. "
                        "Private and internal addresses are refused.",
                        placeholder="https://api.example.com/blocks/latest", check=check_url),
            ConfigField("headers", "Headers", "pairs", secrets=True,
                        help="Request headers, one name and value per row; a value may hold @ references, "
                        "e.g. Bearer <<@__secrets:Secrets.API_KEY>>.", check=check_headers),
            ConfigField("query", "Query", "pairs",
                        help="Query parameters added to the URL, one per row (values are URL-encoded for you).",
                        check=check_query),
            ConfigField("body", "Body", "json", secrets=True,
                        help='Optional. JSON (e.g. {"block": <<@trigger:Trigger.block>>}) is sent as '
                        "application/json; other text as text/plain. A single @ reference keeps its type. "
                        "A secret may stand here, in the URL and in headers, and nowhere else."),
            ConfigField("jsonRpc", "JSON-RPC", "boolean", accepts_references=False, default=False,
                        help='true: the body is one JSON-RPC 2.0 request such as {"method": "eth_blockNumber", '
                        '"params": []}, sent as a POST with "jsonrpc": "2.0" and an id added; the answer\'s '
                        "result is also in result, and an answer carrying an error fails the node with "
                        "HTTP_RPC_ERROR (with Fail on error on).", check=check_json_rpc),
            ConfigField("timeout", "Timeout (seconds)", "integer", advanced=True, default=DEFAULT_TIMEOUT,
                        help=f"Give up after this many seconds (1–{MAX_TIMEOUT}, default {DEFAULT_TIMEOUT}); "
                        "the node fails with HTTP_TIMEOUT.", placeholder=str(DEFAULT_TIMEOUT), check=check_timeout),
            ConfigField("responseType", "Response type", "select", accepts_references=False, advanced=True,
                        choices=RESPONSE_TYPES, default="auto",
                        help="auto: JSON when the server says so, else text. json: always parse (fails if it is "
                        "not JSON). text: never parse.", check=check_response_type),
            ConfigField("failOnError", "Fail on error", "boolean", accepts_references=False, advanced=True,
                        default=True,
                        help="true: an answer outside 2xx fails the node with HTTP_STATUS (with JSON-RPC, an "
                        "answer carrying an error fails it with HTTP_RPC_ERROR). false: the node succeeds and "
                        "later nodes can look at status and ok.", check=check_fail_on_error),
        ),
        output_fields=(
            OutputField("status", "integer", "The HTTP status code, e.g. 200."),
            OutputField("ok", "boolean", "Whether the status is 2xx."),
            OutputField("headers", "object", "The answer's headers, names in lower case."),
            OutputField("body", "any", "The answer: parsed JSON when it is JSON, else text. Run once to pick "
                        "its fields with @."),
            OutputField("durationMs", "integer", "How long the request took, in milliseconds."),
            OutputField("result", "any", "JSON-RPC only: the answer's result (null stays null), e.g. the "
                        "block number of eth_blockNumber as hex text."),
        ),
        handler=run_http_request,
    )
)
