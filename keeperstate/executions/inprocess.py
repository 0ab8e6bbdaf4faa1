"""Runs that a web process executes itself while a request waits for them (a webhook's ``?wait``).

A waited webhook used to queue its run and poll its status every 0.1 s: a run of a few
milliseconds answered in about a hundred. Here the request records the run as ``running`` and
hands it to a small pool of threads in the same process, then waits on the run's future for at
most ``wait`` seconds: a short run answers as fast as the API's synchronous execute, and a run that
takes longer goes on in the pool while the request answers 202 (docs/adr/0058).

The pool is bounded (KEEPERSTATE_WEBHOOK_WAIT_THREADS per web process). A run is handed to it only
when a thread is free at once, so a run recorded ``running`` never waits in a queue of the pool
without its heartbeat; when all are busy the caller queues the run for a worker instead. Each pool
thread keeps its own database connection, checked before each run as a worker's are.
"""

from __future__ import annotations

import contextvars
import threading
from collections.abc import Callable
from concurrent.futures import Future, ThreadPoolExecutor
from concurrent.futures import TimeoutError as FutureTimeout
from typing import TypeVar

from django.conf import settings
from django.db import close_old_connections, connections

_lock = threading.Lock()
_pool: ThreadPoolExecutor | None = None
_free: threading.BoundedSemaphore | None = None
_pid: int | None = None

T = TypeVar("T")


def _ensure_pool() -> tuple[ThreadPoolExecutor, threading.BoundedSemaphore]:
    """The pool of this process, made on first use (after gunicorn forked its workers: threads do
    not survive a fork, so a pool made before it would be dead in the children)."""
    import os

    global _pool, _free, _pid
    with _lock:
        if _pool is None or _free is None or _pid != os.getpid():
            size = settings.KEEPERSTATE_WEBHOOK_WAIT_THREADS
            _pool = ThreadPoolExecutor(max_workers=size, thread_name_prefix="keeperstate-waited-run")
            _free = threading.BoundedSemaphore(size)
            _pid = os.getpid()
        return _pool, _free


def reserve() -> bool:
    """Take a free thread of the pool for one run; False when every thread is busy."""
    _pool_, free = _ensure_pool()
    return free.acquire(blocking=False)


def release() -> None:
    """Give back a thread reserved with ``reserve`` but not used (the run was not recorded)."""
    _ensure_pool()[1].release()


def run_reserved(job: Callable[[], T], wait: float) -> Future[T]:
    """Run ``job`` on the thread reserved for it and wait up to ``wait`` seconds for it; its
    future, done when it ended in time (with its result, or the exception it raised)."""
    pool, free = _ensure_pool()
    context = contextvars.copy_context()  # who acts (the audit context) follows the run

    def in_thread() -> T:
        close_old_connections()  # a connection the database closed meanwhile (a restart) is dropped
        try:
            return context.run(job)
        finally:
            close_old_connections()
            free.release()

    future: Future[T] = pool.submit(in_thread)
    try:
        future.exception(timeout=wait)
    except FutureTimeout:
        pass
    return future


def stop() -> None:
    """Let the runs going in the pool end, close each pool thread's database connection and drop
    the pool (tests call this, so no connection outlives the test that opened it)."""
    global _pool, _free
    with _lock:
        pool, _pool, _free = _pool, None, None
    if pool is None:
        return
    size = pool._max_workers
    # One closing job per thread: each waits at the barrier until every thread holds one.
    barrier = threading.Barrier(size, timeout=10)

    def close() -> None:
        connections.close_all()
        try:
            barrier.wait()
        except threading.BrokenBarrierError:
            pass

    for _ in range(size):
        pool.submit(close)
    pool.shutdown(wait=True)
