"""An alert receiver for the chain tier: a real HTTP server on 127.0.0.1 that records every alert
it is sent, duplicates included, so a test counts deliveries (what the sender did) apart from
what a deduplicating receiver keeps (one per ``dedupKey``, as the demo's sink and PagerDuty do).

``hold(block=6)`` (or any fields, ``hold(type="reorg")``) makes the receiver keep the first delivery
that has them waiting (recorded, not yet answered) until ``release()``: a test kills the worker while
its run waits there, between the alert and the cursor's move.
"""

from __future__ import annotations

import json
import threading
from collections import Counter
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from typing import Any

HOLD_SECONDS = 60  # a held delivery is answered after this at the latest, so no thread outlives a test


class _Handler(BaseHTTPRequestHandler):
    protocol_version = "HTTP/1.1"
    server: _Server

    def log_message(self, format, *args):  # noqa: A002 - the base class's name
        pass

    def do_POST(self):  # noqa: N802 - the base class's name
        length = int(self.headers.get("Content-Length") or 0)
        try:
            alert = json.loads(self.rfile.read(length) or b"null")
        except ValueError:
            alert = None
        receiver = self.server.receiver
        if self.headers.get("Authorization") != f"Bearer {receiver.token}" or not isinstance(alert, dict):
            return self._answer(401 if isinstance(alert, dict) else 400, {"error": "refused"})
        duplicate = receiver.record(alert)
        if receiver.should_hold(alert):
            receiver.holding.set()
            receiver.released.wait(HOLD_SECONDS)
        return self._answer(200 if duplicate else 201, {"duplicate": duplicate})

    def _answer(self, status: int, payload: dict[str, Any]) -> None:
        body = json.dumps(payload).encode()
        self.send_response(status)
        self.send_header("Content-Type", "application/json")
        self.send_header("Content-Length", str(len(body)))
        self.end_headers()
        self.wfile.write(body)


class _Server(ThreadingHTTPServer):
    daemon_threads = True
    receiver: AlertReceiver

    def handle_error(self, request, client_address):
        pass  # a killed worker resets its connection: expected in the fault test


class AlertReceiver:
    def __init__(self, token: str):
        self.token = token
        self.deliveries: list[dict[str, Any]] = []  # every alert received, in order
        self._lock = threading.Lock()
        self._hold: dict[str, Any] | None = None
        self.holding = threading.Event()  # a delivery of the held block is waiting
        self.released = threading.Event()
        self.httpd = _Server(("127.0.0.1", 0), _Handler)
        self.httpd.receiver = self
        self.thread = threading.Thread(target=self.httpd.serve_forever, daemon=True)

    @property
    def address(self) -> str:
        return f"127.0.0.1:{self.httpd.server_address[1]}"

    @property
    def url(self) -> str:
        return f"http://{self.address}/alerts"

    def start(self) -> AlertReceiver:
        self.thread.start()
        return self

    def stop(self) -> None:
        self.released.set()
        self.httpd.shutdown()
        self.httpd.server_close()
        self.thread.join(timeout=10)

    def record(self, alert: dict[str, Any]) -> bool:
        """Keep the delivery; whether its dedupKey was delivered before."""
        with self._lock:
            duplicate = any(seen.get("dedupKey") == alert.get("dedupKey") for seen in self.deliveries)
            self.deliveries.append(alert)
            return duplicate

    def hold(self, **fields: Any) -> None:
        """Keep the next delivery with these fields waiting until ``release()``."""
        with self._lock:
            self.holding.clear()
            self.released.clear()
            self._hold = fields

    def should_hold(self, alert: dict[str, Any]) -> bool:
        with self._lock:
            if self._hold is None or any(alert.get(name) != value for name, value in self._hold.items()):
                return False
            self._hold = None  # the first delivery only: the next run's goes through
            return True

    def release(self) -> None:
        self.released.set()

    def blocks(self) -> list[int]:
        """The blocks delivered, each once, in order (what a deduplicating receiver keeps)."""
        with self._lock:
            return sorted({alert["block"] for alert in self.deliveries})

    def delivered_twice(self) -> dict[int, int]:
        """Block → deliveries, for the blocks delivered more than once."""
        with self._lock:
            counts = Counter(alert["block"] for alert in self.deliveries)
        return {block: n for block, n in counts.items() if n > 1}
