"""Heartbeats of the runs this process is executing, so housekeeping can tell dead from slow.

While a process runs executions, a daemon thread refreshes their ``heartbeat_at`` every
KEEPERSTATE_RUN_HEARTBEAT_SECONDS with one UPDATE. A run that waits on a lock or a slow server
keeps its heartbeat; a process that dies (kill -9, a crash, a lost machine) stops heartbeating,
and housekeeping closes its runs as ``interrupted`` after KEEPERSTATE_RUN_STALE_SECONDS.
"""

from __future__ import annotations

import logging
import threading
import uuid
from collections import defaultdict
from collections.abc import Iterator
from contextlib import contextmanager

from django.conf import settings
from django.db import DatabaseError, connection
from django.utils import timezone

from keeperstate.executions.models import WorkflowExecution
from keeperstate.ops import availability

logger = logging.getLogger(__name__)

# The runs this process executes, by id, with their organizations.
_running: dict[uuid.UUID, int] = {}
_lock = threading.Lock()
_thread: threading.Thread | None = None


@contextmanager
def heartbeating(execution: WorkflowExecution) -> Iterator[None]:
    """Keep the execution's heartbeat fresh while the block runs."""
    global _thread
    with _lock:
        _running[execution.pk] = execution.organization_id
        # Started on first use, so a forking server (gunicorn --preload) starts it in each child.
        if _thread is None or not _thread.is_alive():
            _thread = threading.Thread(target=_beat, name="keeperstate-run-heartbeat", daemon=True)
            _thread.start()
    try:
        yield
    finally:
        with _lock:
            _running.pop(execution.pk, None)


def _beat() -> None:
    stop = threading.Event()
    while not stop.wait(settings.KEEPERSTATE_RUN_HEARTBEAT_SECONDS):
        with _lock:
            running = dict(_running)
        if not running:
            # Idle: hand the connection back (a test database must be droppable, and an idle
            # process should not hold a backend); the next beat with runs opens another.
            connection.close()
            continue
        try:
            refresh(running)
        except DatabaseError as exc:
            if availability.unavailable(exc):
                availability.noticed(exc, "the runs' heartbeat")
            else:
                logger.warning("could not refresh the heartbeat of %d run(s); trying again", len(running))
            connection.close()  # a new connection next time (the database may have restarted)


def refresh(running: dict[uuid.UUID, int]) -> None:
    """Beat for the running executions given (id: organization), one UPDATE per organization:
    each names its organization, so on a sharded database it goes to that one shard
    (docs/scaling.md) and reads the primary key."""
    by_organization: dict[int, list[uuid.UUID]] = defaultdict(list)
    for execution_id, organization_id in running.items():
        by_organization[organization_id].append(execution_id)
    now = timezone.now()
    for organization_id, ids in by_organization.items():
        WorkflowExecution.objects.filter(
            organization_id=organization_id, pk__in=ids, status=WorkflowExecution.Status.RUNNING
        ).update(heartbeat_at=now)
