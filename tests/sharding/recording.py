"""A pytest plugin: every SQL statement the product sends during the run is recorded, and at the end
each one that names a sharded table is read with Postgres's parser (tests/sharding/statements.py).
The run fails when one leaves its organization's shard and is not on docs/scaling.md's list of
statements that fan out (tests/sharding/fanout.py).

Recorded through an execute wrapper on every connection Django opens (threads' too), so the hot
paths' kept cursors are seen as well. A statement is the product's when the code that sent it
runs through ``keeperstate/`` or ``builder/``; a test's own setup and inspection statements (raw
SQL, querysets built in a test, Django's flush between tests) are not judged.
"""

from __future__ import annotations

import sys
import threading
from collections.abc import Callable
from pathlib import Path
from typing import Any

import pytest
from django.db.backends.signals import connection_created

from tests.sharding import fanout
from tests.sharding.statements import findings, touches_sharded

ROOT = Path(__file__).resolve().parents[2]
_PRODUCT = (str(ROOT / "keeperstate") + "/", str(ROOT / "builder") + "/")
_MIGRATIONS = (str(ROOT / "keeperstate" / "migrations") + "/", str(ROOT / "keeperstate" / "demo" / "migrations") + "/")
# Django admin's own code, and ours: its pages are an operator's (docs/scaling.md, "admin pages").
_ADMIN = (str(ROOT / "keeperstate" / "admin") + "/", "/django/contrib/admin/")
# The benchmarks' own statements (their rows made and dropped, their floor tables).
_BENCH = str(ROOT / "keeperstate" / "management" / "commands" / "bench_")


class Recorder:
    """The statements the product sent, each with the first test that sent it."""

    def __init__(self, origin: Callable[[], str | None] | None = None) -> None:
        self.origin = origin or _origin
        self.sent: dict[str, dict[str, str]] = {"product": {}, "admin": {}, "bench": {}}  # origin → sql → test
        self.unsharded: set[str] = set()
        self.test = "(outside a test)"
        self.lock = threading.Lock()

    def __call__(self, execute: Any, sql: Any, params: Any, many: bool, context: Any) -> Any:
        self.record(sql)
        return execute(sql, params, many, context)

    def record(self, sql: Any) -> None:
        if not isinstance(sql, str) or sql in self.sent["product"] or sql in self.unsharded:
            return
        if not touches_sharded(sql):
            self.unsharded.add(sql)
            return
        origin = self.origin()
        if origin is not None:
            with self.lock:
                self.sent[origin].setdefault(sql, self.test)

    def count(self) -> int:
        return len(set().union(*self.sent.values()))

    def violations(self) -> list[tuple[str, str, list[str]]]:
        """(statement, first test, findings) for each recorded statement that leaves its shard and is
        not on the documented list. A statement is judged as its strictest sender's: the product's
        over the admin's pages over the benchmarks'."""
        bad = []
        judged: dict[str, tuple[str, str]] = {}
        for origin in ("bench", "admin", "product"):
            judged.update({sql: (origin, test) for sql, test in self.sent[origin].items()})
        for sql, (origin, test) in sorted(judged.items(), key=lambda item: item[1][1]):
            found = findings(sql)
            if found and not fanout.allowed(sql, found, origin=origin):
                bad.append((sql, test, [str(f) for f in found]))
        return bad


def _origin() -> str | None:
    """"admin" for a statement of the admin's pages, "bench" for one a benchmark sends itself,
    "product" for another of the product's; None for a test's own."""
    frame: Any = sys._getframe(4)
    innermost = None
    while frame is not None:
        filename = frame.f_code.co_filename
        if filename.startswith(_ADMIN[0]) or _ADMIN[1] in filename:
            return "admin"
        if innermost is None and filename.startswith(_PRODUCT) and not filename.startswith(_MIGRATIONS):
            innermost = filename
        frame = frame.f_back
    if innermost is None:
        return None
    return "bench" if innermost.startswith(_BENCH) else "product"


RECORDER = Recorder()


def _watch(sender: Any, connection: Any, **kwargs: Any) -> None:
    if RECORDER not in connection.execute_wrappers:
        connection.execute_wrappers.insert(0, RECORDER)


def pytest_configure(config: pytest.Config) -> None:
    connection_created.connect(_watch, dispatch_uid="keeperstate-sharding-recorder")


@pytest.hookimpl(wrapper=True)
def pytest_runtest_protocol(item: pytest.Item, nextitem: Any) -> Any:
    RECORDER.test = item.nodeid
    return (yield)


_report: list[str] = []


def pytest_sessionfinish(session: pytest.Session, exitstatus: int) -> None:
    bad = RECORDER.violations()
    _report.clear()
    for sql, test, found in bad:
        _report.append(f"{test}: {'; '.join(found)}\n    {' '.join(sql.split())[:400]}")
    if bad and session.exitstatus == pytest.ExitCode.OK:
        session.exitstatus = pytest.ExitCode.TESTS_FAILED


def pytest_terminal_summary(terminalreporter: Any) -> None:
    checked = RECORDER.count()
    if _report:
        terminalreporter.section("statements that leave their organization's shard (docs/scaling.md)", red=True)
        for line in _report:
            terminalreporter.write_line(line)
        terminalreporter.write_line(
            f"{len(_report)} of {checked} statements on sharded tables leave their organization's shard: name the "
            "organization in them, or add them to the fan-out list (docs/scaling.md, tests/sharding/fanout.py) "
            "with why."
        )
    else:
        terminalreporter.write_line(f"sharding check: {checked} statements on sharded tables, each on one shard "
                                    "or on the documented fan-out list")
