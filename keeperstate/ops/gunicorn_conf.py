"""gunicorn's configuration for KeeperState (``gunicorn -c python:keeperstate.ops.gunicorn_conf``).

Loaded by the arbiter before it forks, so what it changes holds in every worker:

* gunicorn writes ``Server: gunicorn`` on every answer and has no setting to leave it out; naming
  the server and its software helps only someone looking for a known hole in it.
* The request line may be as long as gunicorn allows (8,190 bytes, not its default 4,094): a
  state key of 256 characters of any script is at most about 3 KB percent-encoded, and a longer
  one reaches Django, which answers STATE_INVALID_KEY.
* What gunicorn refuses itself, before Django sees the request (a request line past that, too
  many or too large headers, a malformed request), is answered in the API's shape,
  ``{"code", "detail"}`` as JSON (URI_TOO_LONG, REQUEST_HEADERS_TOO_LARGE, BAD_REQUEST), not
  gunicorn's HTML page; the detail is ours, never the request's text echoed back.
"""

from __future__ import annotations

import json
from typing import Any

from gunicorn import util
from gunicorn.http import wsgi

from keeperstate.core.errors import Code, error_body

limit_request_line = 8190  # gunicorn's largest

_default_headers = wsgi.Response.default_headers


def _without_server(self: wsgi.Response) -> list[str]:
    return [line for line in _default_headers(self) if not line.lower().startswith("server:")]


wsgi.Response.default_headers = _without_server  # type: ignore[method-assign]

_CODES = {400: Code.BAD_REQUEST, 403: Code.PERMISSION_DENIED, 414: Code.URI_TOO_LONG,
          431: Code.REQUEST_HEADERS_TOO_LARGE, 500: Code.INTERNAL_ERROR}


def coded_error(sock: Any, status_int: int, reason: str, mesg: str) -> None:
    """gunicorn's util.write_error, answering the catalogue's JSON for the status."""
    body = json.dumps(error_body(_CODES.get(status_int, Code.BAD_REQUEST))).encode()
    head = (f"HTTP/1.1 {status_int} {reason}\r\nConnection: close\r\nContent-Type: application/json\r\n"
            f"Content-Length: {len(body)}\r\nCache-Control: no-store\r\nX-Content-Type-Options: nosniff\r\n\r\n")
    util.write_nonblock(sock, head.encode("latin-1") + body)


util.write_error = coded_error
