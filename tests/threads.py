"""Real concurrency for tests: threads with their own connections, released together by a barrier."""

from __future__ import annotations

import threading
from collections.abc import Callable
from typing import Any

from django.db import connection

# Generous: a shared CI machine can be several times slower than a laptop. A thread that is
# still running after this fails the test by name instead of leaving a hole in the results.
JOIN_TIMEOUT = 600


def run_together(count: int, work: Callable[[int], Any]) -> list[Any]:
    """Run work(i) in `count` threads started at once; return each result or exception."""
    barrier = threading.Barrier(count)
    results: list[Any] = [None] * count

    def target(i: int) -> None:
        try:
            barrier.wait(timeout=JOIN_TIMEOUT)
            results[i] = work(i)
        except Exception as exc:  # collected and asserted by the test
            results[i] = exc
        finally:
            connection.close()

    threads = [threading.Thread(target=target, args=(i,)) for i in range(count)]
    for t in threads:
        t.start()
    for t in threads:
        t.join(timeout=JOIN_TIMEOUT)
    stuck = [i for i, t in enumerate(threads) if t.is_alive()]
    assert not stuck, f"threads {stuck} did not finish within {JOIN_TIMEOUT} s"
    return results
