"""Whether a request's path was UTF-8 as the client sent its bytes.

Django decodes a WSGI path as UTF-8 and re-percent-encodes the bytes that are not (``a%FFb``
arrives as the text ``a%FFb``, the same text ``a%25FFb`` gives), then overwrites the environ's
raw ``PATH_INFO`` with that text: past that point nobody can tell the two apart. So the WSGI
application (keeperstate.wsgi, which gunicorn and runserver serve) looks at the raw bytes first
and marks a path that is not UTF-8 under ``PATH_NOT_UTF8``; the views whose path carries data
(a state key) refuse such a request.
"""

from __future__ import annotations

from collections.abc import Callable, Iterable
from typing import Any

PATH_NOT_UTF8 = "keeperstate.path_not_utf8"


def mark_path(environ: dict[str, Any]) -> None:
    """Mark the environ when its PATH_INFO (the path's bytes as latin-1 text, PEP 3333) is not
    UTF-8: a lone continuation byte, an overlong form (%C0%AF) or an encoded surrogate (%ED%A0%80)."""
    raw = environ.get("PATH_INFO", "")
    try:
        raw.encode("latin-1").decode("utf-8")
    except UnicodeEncodeError:
        return  # text already decoded by the server, not bytes
    except UnicodeDecodeError:
        environ[PATH_NOT_UTF8] = True


class MarkPathBytes:
    """WSGI middleware: ``mark_path`` before the application reads the request."""

    def __init__(self, app: Callable[..., Iterable[bytes]]):
        self.app = app

    def __call__(self, environ: dict[str, Any], start_response: Callable[..., Any]) -> Iterable[bytes]:
        mark_path(environ)
        return self.app(environ, start_response)


def path_was_utf8(meta: dict[str, Any]) -> bool:
    return not meta.get(PATH_NOT_UTF8, False)
