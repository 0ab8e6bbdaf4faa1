"""gunicorn's configuration for KeeperState (``gunicorn -c python:keeperstate.ops.gunicorn_conf``).

gunicorn writes ``Server: gunicorn`` on every answer and has no setting to leave it out; naming
the server and its software helps only someone looking for a known hole in it. Loaded by the
arbiter before it forks, the change below holds in every worker.
"""

from __future__ import annotations

from gunicorn.http import wsgi

_default_headers = wsgi.Response.default_headers


def _without_server(self: wsgi.Response) -> list[str]:
    return [line for line in _default_headers(self) if not line.lower().startswith("server:")]


wsgi.Response.default_headers = _without_server  # type: ignore[method-assign]
