"""Exact rate limits counted in Postgres: organization runs per minute, and the API throttles.

Each check is one statement: an upsert of the window's counter that adds the hit only while
the counter is under the limit. Concurrent callers queue on the counter's row, so exactly
``limit`` of them pass in a window, across every process and machine sharing the database (a
per-process cache would multiply the limit by the number of workers). Windows are fixed
(aligned to multiples of the period), so a burst may straddle two windows; that is the usual
trade-off of a fixed-window counter and keeps the check at one row.
"""

from __future__ import annotations

import math
import time
from dataclasses import dataclass
from typing import Any

from django.conf import settings
from django.db import DEFAULT_DB_ALIAS, connections

from keeperstate.core.cursors import kept_cursor
from keeperstate.core.errors import Code, CodedError

_ON_CONFLICT = """
ON CONFLICT (scope, ident, window_start) DO UPDATE SET hits = c.hits + 1
 WHERE c.hits < %(limit)s
RETURNING hits
"""
HIT_SQL = f"""
INSERT INTO rate_counter AS c (scope, ident, window_start, hits)
VALUES (%(scope)s, %(ident)s, to_timestamp(%(window)s), 1){_ON_CONFLICT}"""


def conditional_hit_sql(condition: str) -> str:
    """HIT_SQL counting the hit only where ``condition`` (SQL) holds, for a statement that counts
    as it reads (a CTE: the API token's rate, counted by the statement that reads the token)."""
    return f"""
INSERT INTO rate_counter AS c (scope, ident, window_start, hits)
SELECT %(scope)s, %(ident)s, to_timestamp(%(window)s), 1 WHERE {condition}{_ON_CONFLICT}"""
# Run when a new window's row was just created: the previous windows of the same counter are
# dead; deleting them keeps one row per counter.
PRUNE_SQL = """
DELETE FROM rate_counter
 WHERE scope = %(scope)s AND ident = %(ident)s AND window_start < to_timestamp(%(window)s)
"""


class Throttled(CodedError):
    error = Code.THROTTLED

    def __init__(self, message: str, *, retry_after: int):
        super().__init__(message, details={"retryAfter": retry_after})
        self.retry_after = retry_after


@dataclass(frozen=True)
class Decision:
    allowed: bool
    retry_after: int  # seconds until the window ends (when refused: when to try again)


def hit(scope: str, ident: str, *, limit: int, period: int) -> Decision:
    """Count one hit of ``ident`` in ``scope``; refused (and not counted) at ``limit`` per period."""
    return _hit(hit_params(scope, ident, limit=limit, period=period))


def _hit(params: dict[str, Any]) -> Decision:
    cursor = kept_cursor()
    cursor.execute(HIT_SQL, params)
    row = cursor.fetchone()
    return decided(params, row[0] if row is not None else None)


def hit_params(scope: str, ident: str, *, limit: int, period: int) -> dict[str, Any]:
    """The parameters of HIT_SQL (and of a conditional hit) for one hit now."""
    now = time.time()
    window = math.floor(now / period) * period
    return {"scope": scope, "ident": ident[:100], "window": window, "limit": limit,
            "retry_after": max(1, math.ceil(window + period - now))}


def decided(params: dict[str, Any], hits: int | None) -> Decision:
    """The decision of a hit that returned ``hits`` (None: refused, not counted). The first hit of
    a window deletes the counter's earlier windows, so each counter keeps one row."""
    if hits == 1:
        kept_cursor().execute(PRUNE_SQL, params)
    return Decision(allowed=hits is not None, retry_after=params["retry_after"])


def check_org_run_rate(organization_id: int) -> None:
    """Count a run of the organization; raise Throttled (429, THROTTLED) past
    KEEPERSTATE_ORG_RUNS_PER_MINUTE. Every way a run starts calls this once, or count_run_ahead."""
    _refuse_unless(_hit(_org_run_params(organization_id)))


def _org_run_params(organization_id: int) -> dict[str, Any]:
    return hit_params("org_runs", str(organization_id), limit=settings.KEEPERSTATE_ORG_RUNS_PER_MINUTE, period=60)


def _refuse_unless(decision: Decision) -> None:
    if not decision.allowed:
        limit = settings.KEEPERSTATE_ORG_RUNS_PER_MINUTE
        raise Throttled(
            f"This organization has started {limit} runs in the last minute, its limit. "
            f"Try again in {decision.retry_after} seconds.",
            retry_after=decision.retry_after,
        )


class RunCount:
    """A run of an organization, counted ahead of the run's transaction (count_run_ahead): its
    decision is read before the run commits (``check``), and a refused run is rolled back whole."""

    def __init__(self, params: dict[str, Any], ahead: Any = None, decision: Decision | None = None):
        self._params, self._ahead, self._decision = params, ahead, decision

    def check(self) -> None:
        """Raise Throttled (429) when the organization was at its limit: then this run must not
        commit. The count's own database error is raised as Django's."""
        if self._decision is None:
            with connections[DEFAULT_DB_ALIAS].wrap_database_errors:
                rows = self._ahead.rows()
            self._decision = decided(self._params, int(rows[0][0]) if rows and rows[0][0] is not None else None)
        _refuse_unless(self._decision)

    def withdraw(self) -> None:
        """The run ended before its count went (nothing of it was sent): it is not counted."""
        if self._ahead is not None and self._decision is None:
            self._ahead.withdraw()


def count_run_ahead(organization_id: int) -> RunCount:
    """Count a run of the organization as check_org_run_rate does, sent with the BEGIN and first
    statement of the run's transaction (keeperstate.ops.postgres, send_ahead): one round trip fewer
    and, outside that transaction, its counter row is not locked until the run commits. The run
    calls ``check()`` before it commits. Where the statement cannot go so (a caller's transaction,
    another backend), it is counted now, and a refusal is raised now."""
    params = _org_run_params(organization_id)
    send_ahead = getattr(connections[DEFAULT_DB_ALIAS], "send_ahead", None)
    ahead = send_ahead(HIT_SQL, params) if send_ahead is not None else None
    if ahead is None:
        decision = _hit(params)
        _refuse_unless(decision)
        return RunCount(params, decision=decision)
    return RunCount(params, ahead)
