"""What a connection really sent, read from libpq's own trace of its protocol messages: each
run of messages the client sent until the server had answered all of them is one wait for the
server (a round trip). Independent of keeperstate.ops.round_trips, which counts from Django's
side, so a test can hold one against the other.

The client has waited when the server has answered every request it sent (a ``Sync`` or a
``Query``, each answered by ``ReadyForQuery``) and nothing was sent after the last one: only then
does its next message start a new round trip. In a pipeline that carries two syncs (a statement
committed on its own before a transaction's BEGIN), the answer to the first may be read before
the rest is sent, while the rest is still unanswered: the client did not wait for it."""

from __future__ import annotations

import tempfile
from collections.abc import Iterator
from contextlib import contextmanager

from django.db import connection
from psycopg import pq


@contextmanager
def traced() -> Iterator[list[list[str]]]:
    """The messages this thread's Django connection sends while the block runs, grouped by round
    trip: ``[["Parse \"\" \"BEGIN\" 0", ...], ["Query \"COMMIT\""]]`` (filled when it ends)."""
    connection.ensure_connection()
    pgconn = connection.connection.pgconn
    groups: list[list[str]] = []
    with tempfile.TemporaryFile() as trace:
        pgconn.trace(trace.fileno())
        pgconn.set_trace_flags(pq.Trace.SUPPRESS_TIMESTAMPS | pq.Trace.REGRESS_MODE)
        try:
            yield groups
        finally:
            pgconn.untrace()
            trace.seek(0)
            groups.extend(_round_trips(trace.read().decode(errors="replace")))


def _round_trips(trace: str) -> list[list[str]]:
    groups: list[list[str]] = []
    previous = None
    unanswered = 0  # requests sent (Sync, Query) whose ReadyForQuery has not come
    unsynced = False  # messages sent after the last request, which the server answers at the next
    for line in trace.splitlines():
        if not line.startswith(("F\t", "B\t")):  # a message's text running over several lines
            if previous == "F":
                groups[-1][-1] += " " + " ".join(line.split())
            continue
        direction, _length, message = line.split("\t", 2)
        name = message.split(maxsplit=1)[0] if message.strip() else ""
        if direction == "F":
            if not groups or (previous == "B" and not unanswered and not unsynced):
                groups.append([])
            groups[-1].append(" ".join(message.split()))
            if name in ("Sync", "Query"):
                unanswered, unsynced = unanswered + 1, False
            elif name != "Flush":
                unsynced = True
        elif name == "ReadyForQuery":
            unanswered -= 1
        previous = direction
    return groups
