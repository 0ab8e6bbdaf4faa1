"""The statements that may leave one organization's shard: docs/scaling.md's list ("What fans out"),
each entry by its name there, what it covers and why that is acceptable.

Only reads, each bounded (an index on id, a user's few organizations, the organizations with work
to do, an operator's page), and one write kept for an upgrade. A lock (``FOR UPDATE``), a join of
two sharded tables off ``organization_id``, a change of a row's organization and an INSERT that
does not name its organization are never on the list. tests/sharding/test_fanout_list.py holds
the list and the page's table equal.
"""

from __future__ import annotations

import re
from collections.abc import Callable
from dataclasses import dataclass

from keeperstate.executions import lifecycle
from keeperstate.state import selectors
from tests.sharding.statements import Finding


@dataclass(frozen=True)
class FanOut:
    name: str
    covers: Callable[[str, Finding, str], bool]  # (statement, finding, its sender: product, admin or bench)


def _read(held_by: str) -> Callable[[str, Finding, str], bool]:
    return lambda sql, finding, origin: (finding.statement == "read" and finding.rule == "unconstrained"
                                         and held_by in finding.held_by)


_DISTINCT_ORGANIZATIONS = re.compile(
    r'^\s*SELECT DISTINCT (\S+\.)?"?organization_id"?( AS "organization_id")? FROM', re.IGNORECASE
)

FAN_OUTS = (
    FanOut("a row by its id", _read("id")),
    FanOut("the user's organizations", _read("organizations")),
    FanOut("which organizations have work",
           lambda sql, f, origin: f.statement == "read" and bool(_DISTINCT_ORGANIZATIONS.match(sql))),
    FanOut("the expired rows' count", lambda sql, f, origin: sql == selectors.COUNT_EXPIRED_SQL),
    FanOut("admin pages",
           lambda sql, f, origin: origin == "admin" and f.statement == "read" and f.rule == "unconstrained"),
    FanOut("a job queued before jobs named the organization",
           lambda sql, f, origin: sql == lifecycle.CLAIM_BY_ID_SQL and f.rule == "unconstrained"),
    FanOut("the benchmarks' own rows", lambda sql, f, origin: origin == "bench"),
)


def allowed(sql: str, found: list[Finding], *, origin: str) -> bool:
    """Whether every finding of ``sql`` is covered by an entry of the list."""
    return all(any(entry.covers(sql, finding, origin) for entry in FAN_OUTS) for finding in found)
