"""A small process supervisor for `manage.py serve`: start children, restart the ones that die,
stop them all by pid with bounded waits.

Children get their own process group, so a terminal's Ctrl-C reaches only the supervisor, which
then stops them in order; and on Linux they get SIGTERM if the supervisor itself dies (even by
``kill -9``), so nothing is left serving without it.
"""

from __future__ import annotations

import ctypes
import os
import signal
import subprocess
import sys
import time
from collections.abc import Callable, Sequence
from dataclasses import dataclass, field

from keeperstate.ops.env import child_environment

PR_SET_PDEATHSIG = 1
# A child that dies this soon after starting, this many times in a row, is not restarted again.
QUICK_DEATH_SECONDS = 10.0
MAX_QUICK_DEATHS = 3


@dataclass
class ChildSpec:
    name: str  # what the log lines call it: "web server (gunicorn)", "worker"
    argv: list[str]
    pass_fds: tuple[int, ...] = ()
    env: dict[str, str] | None = None  # added to the supervisor's environment
    # Called with the child when it has died, before it is started again (serve closes the runs
    # of a dead worker here, at once, instead of waiting for their heartbeat to go stale).
    on_death: Callable[[], None] | None = None


@dataclass
class Child:
    spec: ChildSpec
    process: subprocess.Popen | None = None
    started_at: float = 0.0
    quick_deaths: int = 0
    exit_code: int | None = field(default=None)


class GaveUp(RuntimeError):
    """A child keeps dying right after it starts; the message names it and its exit code."""


def _die_with_parent() -> None:  # runs in the child between fork and exec
    try:
        ctypes.CDLL(None, use_errno=True).prctl(PR_SET_PDEATHSIG, signal.SIGTERM)
    except (OSError, AttributeError):  # not Linux: children outlive a killed supervisor
        pass


class Supervisor:
    def __init__(self, specs: Sequence[ChildSpec], *, log: Callable[[str], None], stop_timeout: float = 15.0):
        self.children = [Child(spec) for spec in specs]
        self.log = log
        self.stop_timeout = stop_timeout

    def start_all(self) -> None:
        for child in self.children:
            self._start(child)

    def _start(self, child: Child) -> None:
        child.process = subprocess.Popen(
            child.spec.argv,
            pass_fds=child.spec.pass_fds,
            env=child_environment(**child.spec.env) if child.spec.env else None,
            process_group=0,
            preexec_fn=_die_with_parent if sys.platform.startswith("linux") else None,
        )
        child.started_at = time.monotonic()
        child.exit_code = None

    def first_exited(self) -> Child | None:
        """A child that has exited (its exit code recorded), or None while all run."""
        for child in self.children:
            if child.process is not None and (code := child.process.poll()) is not None:
                child.exit_code = code
                return child
        return None

    def restart_exited(self) -> None:
        """Start again every child that exited; GaveUp when one keeps dying at once."""
        while (child := self.first_exited()) is not None:
            quick = time.monotonic() - child.started_at < QUICK_DEATH_SECONDS
            child.quick_deaths = child.quick_deaths + 1 if quick else 0
            if child.quick_deaths >= MAX_QUICK_DEATHS:
                raise GaveUp(
                    f"the {child.spec.name} exited with code {child.exit_code} {MAX_QUICK_DEATHS} times right after "
                    "starting; see its messages above"
                )
            self.log(f"the {child.spec.name} (pid {child.process.pid if child.process else '?'}) exited with code "
                     f"{child.exit_code}; restarting it")
            if child.spec.on_death is not None:
                try:
                    child.spec.on_death()
                except Exception as exc:  # the restart matters more; housekeeping closes them later
                    self.log(f"could not clean up after the {child.spec.name}: {type(exc).__name__}")
            self._start(child)

    def stop_all(self) -> None:
        """SIGTERM every child, wait up to ``stop_timeout`` in all, then SIGKILL what is left."""
        # A second Ctrl-C or SIGTERM must not cut the stop short and orphan a child.
        previous = {sig: signal.signal(sig, signal.SIG_IGN) for sig in (signal.SIGINT, signal.SIGTERM)}
        try:
            running = [c.process for c in self.children if c.process is not None and c.process.poll() is None]
            for process in running:
                _signal(process, signal.SIGTERM)
            deadline = time.monotonic() + self.stop_timeout
            for process in running:
                try:
                    process.wait(timeout=max(0.1, deadline - time.monotonic()))
                except subprocess.TimeoutExpired:
                    self.log(f"pid {process.pid} did not stop within {self.stop_timeout:.0f} s; killing it")
                    # Its whole group: gunicorn's workers with their arbiter.
                    try:
                        os.killpg(process.pid, signal.SIGKILL)
                    except ProcessLookupError:
                        pass
                    process.wait(timeout=10)
        finally:
            for sig, handler in previous.items():
                signal.signal(sig, handler)


def _signal(process: subprocess.Popen, sig: int) -> None:
    try:
        os.kill(process.pid, sig)
    except ProcessLookupError:
        pass
