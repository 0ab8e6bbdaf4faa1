"""The one input boundary: every request body (API, builder, webhook) is read here.

Python's json module accepts text that fails later, far from the request: a lone UTF-16
surrogate (``"\\ud800"``) cannot be encoded for the database or the response, ``NaN`` and a
number such as ``1e400`` (infinity) are not JSON and jsonb rejects them, and a document nested
thousands deep exhausts the recursion of every reader after this one. Refusing them here turns
each into a coded 400/413/415 instead of a 500 somewhere else.

U+0000 is left to the services and fields, which can name the field it is in (jsonb cannot
hold it, so each of them refuses it before the database).
"""

from __future__ import annotations

import codecs
import json
import math
from typing import Any

from django.conf import settings
from django.core.exceptions import RequestDataTooBig
from django.http import HttpRequest
from django.http.request import RawPostDataException
from django.utils.http import parse_header_parameters

from keeperstate.core.errors import Code, CodedError

MAX_DEPTH = 64  # configs are shallow; deeper documents are mistakes or attacks on recursion
JSON_MEDIA_TYPES = ("application/json",)


class BodyInvalid(CodedError):
    """Malformed JSON, or JSON no part of the service could hold (400)."""

    error = Code.PARSE_ERROR


class BodyTooLarge(CodedError):
    error = Code.REQUEST_TOO_LARGE


class BodyMediaUnsupported(CodedError):
    error = Code.UNSUPPORTED_MEDIA_TYPE


def parse_json_body(raw: bytes, *, limit: int | None, encoding: str | None = None) -> Any:
    """Parse a request body as JSON, or raise BodyTooLarge / BodyMediaUnsupported / BodyInvalid.

    ``limit`` is the largest body in bytes (None: no limit); ``encoding`` the request's charset
    (UTF-8 when absent). The result holds only finite numbers and encodable text, nested at most
    MAX_DEPTH levels.
    """
    if limit is not None and len(raw) > limit:
        raise BodyTooLarge(f"The request body is larger than {limit} bytes. Send a smaller body.")
    charset = encoding or settings.DEFAULT_CHARSET
    try:
        codecs.lookup(charset)
    except LookupError as exc:
        raise BodyMediaUnsupported(
            f"The charset '{charset[:40]}' is unknown. Send the body as UTF-8 (charset=utf-8)."
        ) from exc
    try:
        text = codecs.decode(raw, charset)
        data = json.loads(text, parse_constant=_reject_constant, parse_float=_finite_float)
    except RecursionError as exc:
        raise BodyInvalid(f"JSON parse error - the document is nested deeper than {MAX_DEPTH} levels.") from exc
    except ValueError as exc:  # includes JSONDecodeError and UnicodeDecodeError
        raise BodyInvalid(f"JSON parse error - {_short(exc)}. Send the body as one valid JSON document.") from exc
    if problem := _problem(data):
        raise BodyInvalid(f"JSON parse error - {problem}")
    return data


def read_json_request(request: HttpRequest, *, empty: Any = None, limit: int | None = None) -> Any:
    """The JSON body of a Django request through ``parse_json_body``. ``limit``: the largest body
    in bytes (default: Django's DATA_UPLOAD_MAX_MEMORY_SIZE; the webhook passes its 256 KB). An
    empty body is ``empty``; a body that is not ``application/json`` is 415."""
    if limit is None:
        limit = settings.DATA_UPLOAD_MAX_MEMORY_SIZE
    try:
        raw = request.body
    except RequestDataTooBig as exc:
        raise BodyTooLarge(f"The request body is larger than {limit} bytes. Send a smaller body.") from exc
    except RawPostDataException as exc:
        # A multipart body that something before the view (the CSRF check) already parsed as a
        # form: it was not JSON, and its raw bytes are gone.
        raise _not_json(request) from exc
    if not raw:
        return empty
    if request.content_type not in JSON_MEDIA_TYPES:
        raise _not_json(request)
    # content_params, not request.encoding: Django drops an unknown charset there silently.
    return parse_json_body(raw, limit=limit, encoding=(request.content_params or {}).get("charset"))


def check_no_body(data: Any) -> None:
    """For a call that takes no body: what the reader made of the body (DRF's ``request.data``, or
    ``read_json_request``'s) must be nothing or an empty JSON object. Anything else — JSON ``null``,
    a list, fields the call does not take — is refused (PARSE_ERROR) before the call acts; a body the
    reader cannot read was refused by it already (400, 413, 415)."""
    if data is None or not isinstance(data, dict) or data:
        raise BodyInvalid("This call takes no body: send none, or an empty JSON object {}.")


def read_no_body(request: HttpRequest) -> None:
    """``check_no_body`` for a Django request, through the one reader."""
    check_no_body(read_json_request(request, empty={}))


def _not_json(request: HttpRequest) -> BodyMediaUnsupported:
    return BodyMediaUnsupported(
        f"The body is '{(request.content_type or 'of no type')[:60]}'; send JSON with "
        "Content-Type: application/json."
    )


def charset_of(media_type: str | None) -> str | None:
    """The charset parameter of a Content-Type header, None when absent."""
    if not media_type:
        return None
    _, params = parse_header_parameters(media_type)
    return params.get("charset")


def _short(exc: Exception) -> str:
    return str(exc)[:200]


def _reject_constant(name: str) -> Any:
    raise ValueError(f"{name} is not a JSON number; send finite numbers only")


def _finite_float(text: str) -> float:
    number = float(text)
    if not math.isfinite(number):
        raise ValueError(f"the number {text[:40]} is out of range")
    return number


def _problem(data: Any) -> str | None:
    """What makes parsed JSON unusable, walking it without recursion; None when it is fine."""
    stack = [(data, 1)]
    while stack:
        item, depth = stack.pop()
        if depth > MAX_DEPTH:
            return f"the document is nested deeper than {MAX_DEPTH} levels."
        if isinstance(item, dict):
            stack.extend((key, depth) for key in item)
            stack.extend((value, depth + 1) for value in item.values())
        elif isinstance(item, list):
            stack.extend((value, depth + 1) for value in item)
        elif isinstance(item, str) and not _encodable(item):
            return "the text contains an unpaired UTF-16 surrogate (an invalid \\u escape)."
    return None


def _encodable(text: str) -> bool:
    try:
        text.encode("utf-8")
    except UnicodeEncodeError:
        return False
    return True
