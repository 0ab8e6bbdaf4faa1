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

from keeperstate.core.cursors import kept_cursor
from keeperstate.core.errors import Code, CodedError

HIT_SQL = """
INSERT INTO rate_counter AS c (scope, ident, window_start, hits)
VALUES (%(scope)s, %(ident)s, to_timestamp(%(window)s), 1)
ON CONFLICT (scope, ident, window_start) DO UPDATE SET hits = c.hits + 1
 WHERE c.hits < %(limit)s
RETURNING hits
"""
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
    now = time.time()
    window = math.floor(now / period) * period
    retry_after = max(1, math.ceil(window + period - now))
    params: dict[str, Any] = {"scope": scope, "ident": ident[:100], "window": window, "limit": limit}
    cursor = kept_cursor()
    cursor.execute(HIT_SQL, params)
    row = cursor.fetchone()
    if row is not None and row[0] == 1:
        cursor.execute(PRUNE_SQL, params)
    return Decision(allowed=row is not None, retry_after=retry_after)


def check_org_run_rate(organization_id: int) -> None:
    """Count a run of the organization; raise Throttled (429, THROTTLED) past
    KEEPERSTATE_ORG_RUNS_PER_MINUTE. Every way a run starts calls this once."""
    limit = settings.KEEPERSTATE_ORG_RUNS_PER_MINUTE
    decision = hit("org_runs", str(organization_id), limit=limit, period=60)
    if not decision.allowed:
        raise Throttled(
            f"This organization has started {limit} runs in the last minute, its limit. "
            f"Try again in {decision.retry_after} seconds.",
            retry_after=decision.retry_after,
        )
