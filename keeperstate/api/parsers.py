"""The API's one request parser: DRF's JSON parser over keeperstate.core.inputs, the same hardened
reader the builder and the webhook use, so a body refused in one place is refused everywhere
with the same code (PARSE_ERROR 400, REQUEST_TOO_LARGE 413, UNSUPPORTED_MEDIA_TYPE 415)."""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

from django.conf import settings
from rest_framework import parsers

from keeperstate.core.inputs import charset_of, parse_json_body


class JSONParser(parsers.JSONParser):
    # The largest body read, in bytes; None: Django's DATA_UPLOAD_MAX_MEMORY_SIZE.
    max_bytes: int | None = None

    def parse(self, stream: Any, media_type: str | None = None, parser_context: Mapping[str, Any] | None = None) -> Any:
        # The header's own charset: DRF's context falls back to UTF-8 for a charset it cannot use.
        encoding = charset_of(media_type) or (parser_context or {}).get("encoding")
        # DRF streams the body past Django's DATA_UPLOAD_MAX_MEMORY_SIZE check; one byte over the
        # limit is enough to refuse it without reading the rest.
        limit = self.max_bytes or settings.DATA_UPLOAD_MAX_MEMORY_SIZE
        raw = stream.read(limit + 1) if limit is not None else stream.read()
        return parse_json_body(raw, limit=limit, encoding=encoding)
