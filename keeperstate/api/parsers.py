"""The API's one request parser: JSON, refusing what Postgres or a JSON reader could not hold.

Python's json module accepts text that would fail later, far from the request: a lone UTF-16
surrogate (``"\\ud800"``) cannot be encoded for the database or the response, and a number
such as ``1e400`` overflows to infinity, which jsonb rejects. Refusing both here turns them
into a 400 instead of a database error. U+0000 is left to the fields, which name the field.
"""

from __future__ import annotations

import codecs
import json
import math
from collections.abc import Mapping
from typing import Any

from django.conf import settings
from rest_framework import parsers
from rest_framework.exceptions import ParseError

from keeperstate.api.exceptions import RequestTooLarge

MAX_DEPTH = 64  # configs are shallow; deeper documents are mistakes or attacks on recursion


class JSONParser(parsers.JSONParser):
    # The largest body read, in bytes; None: Django's DATA_UPLOAD_MAX_MEMORY_SIZE.
    max_bytes: int | None = None

    def parse(self, stream: Any, media_type: str | None = None, parser_context: Mapping[str, Any] | None = None) -> Any:
        encoding = (parser_context or {}).get("encoding", settings.DEFAULT_CHARSET)
        # DRF streams the body past Django's DATA_UPLOAD_MAX_MEMORY_SIZE check; apply it here.
        limit = self.max_bytes or settings.DATA_UPLOAD_MAX_MEMORY_SIZE
        raw = stream.read(limit + 1) if limit is not None else stream.read()
        if limit is not None and len(raw) > limit:
            raise RequestTooLarge(f"The request body is larger than {limit} bytes.")
        try:
            text = codecs.decode(raw, encoding)
            data = json.loads(text, parse_constant=_reject_constant, parse_float=_finite_float)
        except RecursionError as exc:
            raise ParseError(f"JSON parse error - the document is nested deeper than {MAX_DEPTH} levels.") from exc
        except (ValueError, LookupError) as exc:  # LookupError: an unknown charset
            raise ParseError(f"JSON parse error - {exc}") from exc
        if problem := _problem(data):
            raise ParseError(f"JSON parse error - {problem}")
        return data


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
