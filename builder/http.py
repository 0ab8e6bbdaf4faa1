"""What the builder's views share: reading a JSON body with keeperstate's one hardened reader, and
answering a failure as a small HTML fragment (keeperstate.core.failures decides its code, sentence
and status, as for the API and the MCP). The builder answers HTML only; every JSON the editor
reads or writes is the API's."""

from __future__ import annotations

from typing import Any

from django.http import HttpRequest, HttpResponse
from django.shortcuts import render

from keeperstate.core.failures import failure_of
from keeperstate.core.inputs import BodyInvalid, read_json_request


def read_json(request: HttpRequest) -> dict[str, Any]:
    """The request body as a JSON object (empty: ``{}``), read by keeperstate's one hardened
    reader, so a bad body is refused with the API's codes (PARSE_ERROR, REQUEST_TOO_LARGE,
    UNSUPPORTED_MEDIA_TYPE)."""
    body = read_json_request(request, empty={})
    if not isinstance(body, dict):
        raise BodyInvalid('The request body must be a JSON object, for example {"key": "cursor"}.')
    return body


def failure_fragment(request: HttpRequest, exc: BaseException) -> HttpResponse:
    """``exc`` as an HTML fragment, ``<p class="form-error" data-code="…">sentence</p>``, with its status."""
    failure = failure_of(exc, where="the builder")
    response = render(request, "builder/failure.html", {"failure": failure}, status=failure.status)
    for name, value in failure.headers.items():
        response[name] = value
    return response
