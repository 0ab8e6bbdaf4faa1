"""A real HTTP server for the HTTP Request tests: threads, 127.0.0.1 only, an ephemeral port."""

from __future__ import annotations

import json
import threading
import time
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from urllib.parse import parse_qs, unquote, urlsplit


class Handler(BaseHTTPRequestHandler):
    protocol_version = "HTTP/1.1"
    hits: list[str]

    def log_message(self, format, *args):  # noqa: A002 - the base class's name
        pass

    def _send(self, status: int, body: bytes, content_type: str = "application/json", headers=None):
        self.send_response(status)
        self.send_header("Content-Type", content_type)
        self.send_header("Content-Length", str(len(body)))
        for name, value in (headers or {}).items():
            self.send_header(name, value)
        self.end_headers()
        if self.command != "HEAD":
            self.wfile.write(body)

    def _route(self):
        self.server.hits.append(f"{self.command} {self.path}")  # type: ignore[attr-defined]
        parts = urlsplit(self.path)
        query = {k: v[0] for k, v in parse_qs(parts.query).items()}
        length = int(self.headers.get("Content-Length") or 0)
        body = self.rfile.read(length) if length else b""
        path = parts.path
        if path == "/echo" or path.startswith("/echo/"):
            payload = {
                "method": self.command,
                "path": path,
                "query": query,
                "headers": {k.lower(): v for k, v in self.headers.items()},
                "body": body.decode("utf-8"),
                "contentType": self.headers.get("Content-Type"),
            }
            return self._send(200, json.dumps(payload).encode())
        if path == "/rpc":
            return self._rpc(body, query)
        if path == "/nul-json":
            return self._send(200, b'{"a": "x\\u0000y"}')
        if path == "/nul-text":
            return self._send(200, b"x\x00y", "text/plain")
        if path.startswith("/text-of/"):
            return self._send(400, unquote(path[len("/text-of/"):]).encode(), "text/plain")
        if path == "/text":
            return self._send(200, b"plain words", "text/plain; charset=utf-8")
        if path == "/block":
            payload = {"block": 19000123, "hash": "0xabc", "final": True, "gas": 1.5, "txs": [{"id": "t1"}],
                       "miner": {"name": "pool"}}
            return self._send(200, json.dumps(payload).encode())
        if path.startswith("/status/"):
            status = int(path.rsplit("/", 1)[1])
            return self._send(status, json.dumps({"error": f"status {status}"}).encode())
        if path == "/slow":
            time.sleep(float(query.get("s", "3")))
            return self._send(200, b'{"late": true}')
        if path == "/big":
            size = int(query["bytes"])
            self.send_response(200)
            self.send_header("Content-Type", "text/plain")
            if query.get("chunked"):
                self.send_header("Transfer-Encoding", "chunked")
                self.end_headers()
                chunk = b"x" * 65536
                sent = 0
                try:
                    while sent < size:
                        self.wfile.write(b"%x\r\n%s\r\n" % (len(chunk), chunk))
                        sent += len(chunk)
                    self.wfile.write(b"0\r\n\r\n")
                except OSError:
                    pass
                return None
            self.send_header("Content-Length", str(size))
            self.end_headers()
            try:
                self.wfile.write(b"x" * size)
            except OSError:
                pass
            return None
        if path.startswith("/redirect/"):
            left = int(path.rsplit("/", 1)[1])
            target = "/echo" if left <= 1 else f"/redirect/{left - 1}"
            return self._send(302, b"", headers={"Location": target})
        if path == "/redirect-to":
            return self._send(302, b"", headers={"Location": query["url"]})
        return self._send(404, b'{"error": "no such path"}')

    def _rpc(self, body: bytes, query: dict[str, str]):
        """A JSON-RPC 2.0 endpoint: ``echo`` answers the request it got (and how it came), ``null``
        a null result, ``empty`` no result at all, ``fail`` an execution error; other methods the
        standard "method not found". ``?status=`` sets the HTTP status, ``?type=`` the content type."""
        try:
            request = json.loads(body)
        except ValueError:
            request = None
        if not isinstance(request, dict):
            answer = {"jsonrpc": "2.0", "id": None, "error": {"code": -32700, "message": "parse error"}}
        else:
            answer = {"jsonrpc": "2.0", "id": request.get("id")}
            method = request.get("method")
            if method == "echo":
                answer["result"] = {"request": request, "httpMethod": self.command,
                                    "contentType": self.headers.get("Content-Type")}
            elif method == "null":
                answer["result"] = None
            elif method == "fail":
                answer["error"] = {"code": -32000, "message": "execution reverted", "data": "0x08c379a0"}
            elif method != "empty":
                answer["error"] = {"code": -32601, "message": f"the method {method} does not exist"}
        return self._send(int(query.get("status", "200")), json.dumps(answer).encode(),
                          query.get("type", "application/json"))

    do_GET = do_POST = do_PUT = do_PATCH = do_DELETE = _route  # noqa: N815


class QuietServer(ThreadingHTTPServer):
    def handle_error(self, request, client_address):
        # A client that stops reading (the 2 MB answer refused) resets the connection: expected here.
        pass


class LocalServer:
    def __init__(self):
        self.httpd = QuietServer(("127.0.0.1", 0), Handler)
        self.httpd.daemon_threads = True
        self.httpd.hits = []  # type: ignore[attr-defined]
        self.thread = threading.Thread(target=self.httpd.serve_forever, daemon=True)

    @property
    def port(self) -> int:
        return self.httpd.server_address[1]

    @property
    def url(self) -> str:
        return f"http://127.0.0.1:{self.port}"

    @property
    def hits(self) -> list[str]:
        return self.httpd.hits  # type: ignore[attr-defined]

    def start(self) -> LocalServer:
        self.thread.start()
        return self

    def stop(self) -> None:
        self.httpd.shutdown()
        self.httpd.server_close()
        self.thread.join(timeout=5)
