"""A bounded load of counter runs against a live service, as a careful client sends them.

Each intended run gets its own Idempotency-Key; after a 503, a refused connection or a timeout
the client retries with the same key (what the README tells clients to do), and a run it finds
still going it polls until it ends. So at the end every client knows what happened to each of its
runs, and the test can compare that with what the database holds.
"""

from __future__ import annotations

import http.client
import json
import threading
import time
import uuid
from collections import Counter
from dataclasses import dataclass, field
from typing import Any

FINISHED = {"success", "error", "interrupted", "skipped"}
DRIVER_TEXT = ("psycopg", "Traceback", "OperationalError", "server closed", "SQLSTATE")


@dataclass
class Answers:
    statuses: Counter[int] = field(default_factory=Counter)
    refused: int = 0  # connections refused or reset (the web process was down)
    violations: list[str] = field(default_factory=list)  # a 500, or driver text in a body
    outcomes: dict[str, str] = field(default_factory=dict)  # idempotency key → final status
    executions: dict[str, str] = field(default_factory=dict)  # idempotency key → execution id
    lock: threading.Lock = field(default_factory=threading.Lock)


class Load:
    def __init__(self, port: int, token: str, workflow_id: str, *, background: bool = False):
        self.port, self.token, self.workflow_id, self.background = port, token, workflow_id, background
        self.answers = Answers()

    def run(self, *, clients: int, seconds: float, give_up_after: float = 90) -> Answers:
        stop_at = time.monotonic() + seconds
        threads = [
            threading.Thread(target=self._client, args=(stop_at, give_up_after), daemon=True) for _ in range(clients)
        ]
        for thread in threads:
            thread.start()
        for thread in threads:
            thread.join(timeout=seconds + give_up_after + 30)
        assert not any(t.is_alive() for t in threads), "a client did not finish in its bounded time"
        return self.answers

    def _client(self, stop_at: float, give_up_after: float) -> None:
        while time.monotonic() < stop_at:
            key = str(uuid.uuid4())
            self._one_run(key, time.monotonic() + give_up_after)

    def _one_run(self, key: str, deadline: float) -> None:
        query = "?async=true" if self.background else ""
        execution: dict[str, Any] | None = None
        while time.monotonic() < deadline and execution is None:
            status, body = self._request("POST", f"/api/workflows/{self.workflow_id}/execute/{query}",
                                         {"input": {}}, key)
            if status in (200, 201, 202):
                execution = body
            else:
                time.sleep(0.3)  # 503 or no connection: retry with the same key
        while execution is not None and execution["status"] not in FINISHED and time.monotonic() < deadline:
            time.sleep(0.3)
            status, body = self._request("GET", f"/api/executions/{execution['id']}/", None, None)
            if status == 200:
                execution = body
        with self.answers.lock:
            if execution is not None:
                self.answers.executions[key] = execution["id"]
                self.answers.outcomes[key] = execution["status"]
            else:
                self.answers.outcomes[key] = "unknown"

    def _request(self, method: str, path: str, body: Any, key: str | None) -> tuple[int, Any]:
        headers = {"Authorization": f"Token {self.token}", "Content-Type": "application/json"}
        if key:
            headers["Idempotency-Key"] = key
        connection = http.client.HTTPConnection("127.0.0.1", self.port, timeout=30)
        try:
            connection.request(method, path, json.dumps(body) if body is not None else None, headers)
            response = connection.getresponse()
            raw = response.read().decode(errors="replace")
        except (OSError, http.client.HTTPException):
            # No connection, or a server killed mid-answer (IncompleteRead, BadStatusLine): the
            # client does not know what happened and asks again with the same key.
            with self.answers.lock:
                self.answers.refused += 1
            return 0, None
        finally:
            connection.close()
        with self.answers.lock:
            self.answers.statuses[response.status] += 1
            if response.status == 500 or any(text in raw for text in DRIVER_TEXT):
                self.answers.violations.append(f"{response.status} {raw[:300]}")
        try:
            return response.status, json.loads(raw)
        except ValueError:
            with self.answers.lock:
                self.answers.violations.append(f"{response.status} not JSON: {raw[:200]}")
            return response.status, None
