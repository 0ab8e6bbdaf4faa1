"""What a connection really sent, read from libpq's own trace of its protocol messages: each
run of messages the client sent before the server's next answer is one wait for the server (a
round trip). Independent of keeperstate.ops.round_trips, which counts from Django's side, so a
test can hold one against the other."""

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
    for line in trace.splitlines():
        if not line.startswith(("F\t", "B\t")):  # a message's text running over several lines
            if previous == "F":
                groups[-1][-1] += " " + " ".join(line.split())
            continue
        direction, _length, message = line.split("\t", 2)
        if direction == "F":
            if previous != "F":
                groups.append([])
            groups[-1].append(" ".join(message.split()))
        previous = direction
    return groups
