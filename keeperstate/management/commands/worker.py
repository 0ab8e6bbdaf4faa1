"""Run queued executions, the scheduler and housekeeping; start as many as you like, on any
machines that share the database (DESIGN.md §11)."""

from __future__ import annotations

import asyncio
import logging
import os
import socket
from collections.abc import Callable
from typing import Any

from asgiref.sync import sync_to_async
from django.conf import settings
from django.core.management.base import BaseCommand
from django.db import DatabaseError, close_old_connections

from keeperstate.executions.housekeeping import housekeeping, interrupt_stale_runs, requeue_orphaned_runs
from keeperstate.executions.listening import worker_connector
from keeperstate.executions.scheduling import schedule_due
from keeperstate.executions.tasks import QUEUE
from keeperstate.ops import availability
from keeperstate.ops.env import env_str

logger = logging.getLogger("keeperstate.worker")


class Command(BaseCommand):
    help = (
        "Run queued executions (Procrastinate), the scheduler and housekeeping until Ctrl-C or SIGTERM. "
        "Any number of workers may run against one database."
    )

    def add_arguments(self, parser: Any) -> None:
        parser.add_argument(
            "--concurrency",
            type=int,
            default=settings.KEEPERSTATE_WORKER_CONCURRENCY,
            help="executions this worker runs at once (default %(default)s)",
        )
        parser.add_argument("--no-scheduler", action="store_true", help="run executions only, no scheduler")

    def handle(self, *args: Any, **options: Any) -> None:
        from procrastinate.contrib.django import app
        from procrastinate.contrib.django.django_connector import DjangoConnector

        name = f"{socket.gethostname()}:{os.getpid()}"
        self.stdout.write(
            f"worker {name}: executions (concurrency {options['concurrency']})"
            + ("" if options["no_scheduler"] else ", scheduler, housekeeping")
        )
        self.stdout.flush()
        assert isinstance(app.connector, DjangoConnector)
        # Procrastinate's own worker command does the same: an async pool for the worker loop; ours
        # listens for jobs again after the database restarts (keeperstate/executions/listening.py).
        with app.replace_connector(worker_connector()) as worker_app:
            asyncio.run(_serve(worker_app, name, options["concurrency"], not options["no_scheduler"]))
        self.stdout.write(f"worker {name}: stopped")


async def _serve(app: Any, name: str, concurrency: int, scheduler: bool) -> None:
    async with app.open_async():
        app.perform_import_paths()
        worker = app._worker(  # what app.run_worker_async builds; kept, to learn its registry id
            queues=[QUEUE],
            name=name,
            concurrency=concurrency,
            delete_jobs="always",  # the execution row is the record; finished jobs are noise
            update_heartbeat_interval=settings.KEEPERSTATE_WORKER_HEARTBEAT_SECONDS,
            stalled_worker_timeout=settings.KEEPERSTATE_WORKER_STALLED_SECONDS,
            # Notifications wake the worker at once; polling only catches what they miss.
            fetch_job_polling_interval=settings.KEEPERSTATE_WORKER_POLL_SECONDS,
            install_signal_handlers=True,  # Ctrl-C / SIGTERM: finish running jobs, then stop
        )
        jobs = asyncio.create_task(worker.run())
        loops = [asyncio.create_task(_tell_worker_id(worker))]
        if scheduler:
            loops += [
                asyncio.create_task(_every(settings.KEEPERSTATE_SCHEDULER_POLL_SECONDS, _in_thread(schedule_due))),
                asyncio.create_task(_every(settings.KEEPERSTATE_RECOVERY_SECONDS, _recover(app))),
                asyncio.create_task(_every(settings.KEEPERSTATE_HOUSEKEEPING_SECONDS, _in_thread(housekeeping))),
            ]
        try:
            await jobs
        finally:
            for loop in loops:
                loop.cancel()
            await asyncio.gather(*loops, return_exceptions=True)


async def _tell_worker_id(worker: Any) -> None:
    """Write the worker's id in Procrastinate's registry of workers to KEEPERSTATE_WORKER_ID_FILE
    (set by `serve`), so `serve` can close this worker's runs the moment it dies."""
    path = env_str("KEEPERSTATE_WORKER_ID_FILE")
    while path and worker.worker_id is None:
        await asyncio.sleep(0.05)
    if path:
        with open(path, "w") as out:
            out.write(str(worker.worker_id))


def _in_thread(function: Callable[[], Any]) -> Callable[[], Any]:
    """A Django ORM call for the event loop: in a thread, on a connection that is checked first
    (the database may have restarted since the last call)."""

    def call() -> Any:
        close_old_connections()
        try:
            return function()
        finally:
            close_old_connections()

    return sync_to_async(call, thread_sensitive=False)


def _recover(app: Any) -> Callable[[], Any]:
    sweep = _in_thread(interrupt_stale_runs)
    requeue = _in_thread(requeue_orphaned_runs)

    async def run() -> None:
        if interrupted := await sweep():
            logger.warning("closed %d execution(s) left running by a dead process as interrupted", interrupted)
        if requeued := await requeue():
            logger.warning("queued %d execution(s) again whose job was lost", requeued)
        # Jobs whose worker stopped sending heartbeats go back to the queue: an execution that
        # never started runs elsewhere; one that had started is not run again (run_queued).
        stalled = await app.job_manager.get_stalled_jobs(
            seconds_since_heartbeat=settings.KEEPERSTATE_WORKER_STALLED_SECONDS
        )
        for job in stalled:
            await app.job_manager.retry_job(job)
            logger.info("job %s of a stalled worker handed back to the queue", job.id)

    return run


async def _every(seconds: float, step: Callable[[], Any]) -> None:
    while True:
        try:
            await step()
        except Exception as exc:
            if availability.unavailable(exc):  # the outage's one line, the worker keeps trying
                availability.noticed(exc, "the worker's scheduler and housekeeping")
            elif isinstance(exc, DatabaseError):
                logger.warning("a scheduler or housekeeping step met a database error (%s); trying again",
                               type(exc).__name__)
            else:
                logger.exception("a scheduler or housekeeping step failed; trying again")
        await asyncio.sleep(seconds)
