"""The HA tier prints its figures at the end of the run, as the fuzz tier prints its counts."""

from __future__ import annotations

from typing import Any

from tests.ha.cluster import FIGURES


def pytest_terminal_summary(terminalreporter: Any) -> None:
    for line in FIGURES:
        terminalreporter.write_line(line)
