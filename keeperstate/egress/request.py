"""Send one HTTP request for a workflow: guarded egress, redirects hop by hop (at most 5), one
deadline for the whole exchange, a byte ceiling on the answer, and the answer as JSON-safe
data. No retries: a request a run made is never sent twice by us."""

from __future__ import annotations

import json
import time
from dataclasses import dataclass
from typing import Any

import httpx
from django.conf import settings

from keeperstate.core.errors import Code, CodedError
from keeperstate.core.numbers import whole_number
from keeperstate.egress.policy import EgressBlocked, allow_entries
from keeperstate.egress.transport import guarded_client

MAX_REDIRECTS = 5
EXCERPT_CHARS = 200


class HttpTimeout(CodedError):
    error = Code.HTTP_TIMEOUT


class HttpResponseTooLarge(CodedError):
    error = Code.HTTP_RESPONSE_TOO_LARGE


class HttpRequestFailed(CodedError):
    error = Code.HTTP_REQUEST_FAILED


class HttpTooManyRedirects(CodedError):
    error = Code.HTTP_TOO_MANY_REDIRECTS


class HttpResponseNotJson(CodedError):
    error = Code.HTTP_RESPONSE_NOT_JSON


@dataclass(frozen=True)
class OutboundRequest:
    method: str
    url: str
    headers: dict[str, str]
    query: dict[str, str]
    content: bytes | None
    timeout: float


@dataclass(frozen=True)
class Answer:
    status: int
    reason: str
    headers: dict[str, str]
    content: bytes
    encoding: str
    content_type: str
    duration_ms: int
    url: str


def max_response_bytes() -> int:
    return int(getattr(settings, "KEEPERSTATE_HTTP_MAX_BYTES", 1024 * 1024))


def send(outbound: OutboundRequest) -> Answer:
    """Send the request and read the answer; raises a CodedError for every failure."""
    started = time.monotonic()
    deadline = started + outbound.timeout
    limit = max_response_bytes()
    entries = allow_entries()
    with guarded_client(entries) as builder:
        url = httpx.URL(outbound.url)
        if outbound.query:
            url = url.copy_merge_params(outbound.query)  # added to the URL's own query, not replacing it
        request = builder.build_request(outbound.method, url, headers=outbound.headers, content=outbound.content)
    for hop in range(MAX_REDIRECTS + 1):
        host = request.url.host
        # One client per hop, judged with the path it requests (allow-list entries may be limited
        # to a path prefix): a redirect never reuses a connection opened for another path.
        with guarded_client(entries, path=request.url.raw_path.decode("ascii", "replace")) as client:
            try:
                request.extensions["timeout"] = httpx.Timeout(_remaining(deadline, outbound.timeout)).as_dict()
                response = client.send(request, stream=True)
            except EgressBlocked:
                raise
            except httpx.TimeoutException as exc:
                raise _timeout(outbound.timeout) from exc
            except httpx.HTTPError as exc:
                raise HttpRequestFailed(
                    f"The request to {host} failed: {_reason(exc)}. Check the URL and that the server is up.",
                    details={"host": host},
                ) from exc
            try:
                if response.next_request is not None:
                    if hop == MAX_REDIRECTS:
                        raise HttpTooManyRedirects(
                            f"The server redirected more than {MAX_REDIRECTS} times; request the final URL directly.",
                            details={"redirects": MAX_REDIRECTS},
                        )
                    request = response.next_request
                    continue
                content = _read_capped(response, limit, deadline, outbound.timeout)
                duration_ms = int((time.monotonic() - started) * 1000)
                return Answer(
                    status=response.status_code,
                    reason=response.reason_phrase,
                    headers=_headers(response.headers),
                    content=content,
                    encoding=response.encoding or "utf-8",
                    content_type=response.headers.get("content-type", ""),
                    duration_ms=duration_ms,
                    url=str(response.url),
                )
            finally:
                response.close()
    raise AssertionError("unreachable")  # pragma: no cover


def _remaining(deadline: float, timeout: float) -> float:
    left = deadline - time.monotonic()
    if left <= 0:
        raise _timeout(timeout)
    return left


def _timeout(timeout: float) -> HttpTimeout:
    return HttpTimeout(
        f"The server did not answer within {timeout:g} s. Try again later, or raise the timeout (at most 30).",
        details={"timeout": timeout},
    )


def _read_capped(response: httpx.Response, limit: int, deadline: float, timeout: float) -> bytes:
    declared = response.headers.get("content-length", "")
    if (size := whole_number(declared)) is not None and size > limit:
        raise _too_large(limit)
    chunks: list[bytes] = []
    size = 0
    try:
        for chunk in response.iter_bytes():  # decoded bytes: a compressed bomb counts at full size
            size += len(chunk)
            if size > limit:
                raise _too_large(limit)
            chunks.append(chunk)
            _remaining(deadline, timeout)
    except httpx.TimeoutException as exc:
        raise _timeout(timeout) from exc
    except httpx.HTTPError as exc:
        raise HttpRequestFailed(
            f"The answer from {response.url.host} broke off: {_reason(exc)}. Try again.",
            details={"host": response.url.host},
        ) from exc
    return b"".join(chunks)


def _too_large(limit: int) -> HttpResponseTooLarge:
    return HttpResponseTooLarge(
        f"The answer is larger than {limit:,} bytes. Ask the server for less (a filter, a page, a smaller "
        "range); workflows are not meant to carry files.",
        details={"limit": limit},
    )


def _headers(headers: httpx.Headers) -> dict[str, str]:
    out: dict[str, str] = {}
    for name, value in headers.multi_items():
        name = name.lower()
        out[name] = f"{out[name]}, {value}" if name in out else value
    return {k: json_safe(v) for k, v in out.items()}


def _reason(exc: Exception) -> str:
    if isinstance(exc, httpx.ConnectError):
        text = str(exc)
        if "does not resolve" in text or "Name or service" in text or "getaddrinfo" in text:
            return "the host name does not resolve"
        if "CERTIFICATE" in text.upper() or "SSL" in text.upper():
            return "the TLS handshake failed (certificate not valid for this host?)"
        return "the connection was refused or could not be made"
    if isinstance(exc, httpx.RemoteProtocolError):
        return "the server broke the HTTP protocol"
    if isinstance(exc, httpx.UnsupportedProtocol | httpx.InvalidURL):
        return "the URL is not a valid http(s) URL"
    return exc.__class__.__name__


def json_safe(value: Any) -> Any:
    """The value without what Postgres jsonb cannot hold (U+0000)."""
    if isinstance(value, str):
        return value.replace("\x00", "\ufffd")
    if isinstance(value, list):
        return [json_safe(v) for v in value]
    if isinstance(value, dict):
        return {json_safe(k): json_safe(v) for k, v in value.items()}
    return value


def _refuse_constant(name: str) -> Any:
    raise ValueError(f"{name} is not JSON")


def parse_json(content: bytes, encoding: str) -> Any:
    """The JSON of a body, or raise ValueError (NaN, Infinity and absurd nesting included)."""
    try:
        text = content.decode(encoding if encoding else "utf-8")
    except (LookupError, UnicodeDecodeError):
        text = content.decode("utf-8", errors="replace")
    try:
        return json_safe(json.loads(text, parse_constant=_refuse_constant))
    except RecursionError as exc:
        raise ValueError("nested too deeply") from exc


def as_text(content: bytes, encoding: str) -> str:
    try:
        text = content.decode(encoding or "utf-8", errors="replace")
    except LookupError:
        text = content.decode("utf-8", errors="replace")
    return json_safe(text)


def is_json_type(content_type: str) -> bool:
    media = content_type.split(";", 1)[0].strip().lower()
    return media == "application/json" or media.endswith("+json")


def excerpt(text: str) -> str:
    text = " ".join(text.split())
    return text if len(text) <= EXCERPT_CHARS else text[: EXCERPT_CHARS - 1] + "…"
