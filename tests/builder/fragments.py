"""What a config form's fragment says, read from its HTML as the editor reads it: whether it is
valid, the normalised config (``<script id="normalised-config">``) and each field's errors with
their codes (``<li data-code>`` under ``.field[data-field]``)."""

from __future__ import annotations

import json
from html.parser import HTMLParser
from typing import Any


class _Reader(HTMLParser):
    def __init__(self) -> None:
        super().__init__()
        self.valid = False
        self.config: Any = None
        self.errors: dict[str, list[dict[str, str]]] = {}
        self.failure: dict[str, str] | None = None
        self._field: str | None = None
        self._text: list[str] | None = None
        self._into: tuple[str, Any] | None = None

    def handle_starttag(self, tag: str, attrs: list[tuple[str, str | None]]) -> None:
        found = dict(attrs)
        if tag == "form" and found.get("data-valid") == "true":
            self.valid = True
        if tag == "div" and "data-field" in found:
            self._field = found["data-field"]
        if tag == "li" and self._field is not None and "data-code" in found:
            self._text, self._into = [], ("error", found["data-code"])
        if tag == "script" and found.get("id") == "normalised-config":
            self._text, self._into = [], ("config", None)
        if tag == "p" and "form-error" in (found.get("class") or ""):
            self._text, self._into = [], ("failure", found.get("data-code"))

    def handle_data(self, data: str) -> None:
        if self._text is not None:
            self._text.append(data)

    def handle_endtag(self, tag: str) -> None:
        if self._into is None or self._text is None or tag not in ("li", "script", "p"):
            return
        text, (kind, code) = "".join(self._text), self._into
        if kind == "error" and self._field is not None:
            self.errors.setdefault(self._field, []).append({"code": code, "message": text})
        elif kind == "config":
            self.config = json.loads(text)
        elif kind == "failure":
            self.failure = {"code": code, "detail": text}
        self._text = self._into = None


def judged(response: Any) -> dict[str, Any]:
    """``{"valid": True, "config"}`` or ``{"valid": False, "errors": {field: [{"code", "message"}]}}``;
    a refused request: ``{"code", "detail"}``."""
    reader = _Reader()
    reader.feed(response.content.decode())
    if reader.failure is not None:
        return reader.failure
    if reader.valid:
        return {"valid": True, "config": reader.config}
    return {"valid": False, "errors": reader.errors}
