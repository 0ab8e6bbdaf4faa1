"""`manage.py serve`: the one command of a fresh machine, and a small supervisor.

It binds the address first (a busy port fails in one line, before anything else happens), opens
its database connection (the embedded Postgres starts there; a data folder it cannot use fails in
one line too), migrates, collects static files, seeds the demo once, then starts gunicorn (web,
whitenoise for static files) and one `manage.py worker` when that command exists, and prints the
URLs only once the web server answers. While it runs it restarts a child that dies and the
embedded Postgres if it stops. Ctrl-C or SIGTERM stops the children by pid (bounded waits, then
SIGKILL) and then the embedded Postgres, when no other process still uses it.
"""

from __future__ import annotations

import functools
import http.client
import os
import socket
import sys
import tempfile
import time
from pathlib import Path
from typing import Any

from django.apps import apps
from django.conf import settings
from django.core.management import call_command, get_commands
from django.core.management.base import BaseCommand, CommandParser
from django.db import connections

from keeperstate.core.numbers import whole_number
from keeperstate.executions.housekeeping import interrupt_runs_of_worker
from keeperstate.ops import database
from keeperstate.ops.env import env_list
from keeperstate.ops.supervisor import ChildSpec, GaveUp, Supervisor

READY_TIMEOUT_SECONDS = 60.0
TICK_SECONDS = 0.5


class StartFailed(Exception):
    """serve cannot start; the message is the one line it prints."""


def parse_addrport(text: str) -> tuple[str, int]:
    """``8012``, ``0.0.0.0:8080``, ``[::1]:8000`` or ``localhost:8000`` → (host, port)."""
    host, sep, port = text.rpartition(":")
    if not sep:
        host, port = "127.0.0.1", text
    host = host.strip("[]") or "127.0.0.1"
    number = whole_number(port)
    if number is None or not 0 < number < 65536:
        raise StartFailed(f"'{text}' is not an address: give a port (8012) or address:port (0.0.0.0:8080).")
    return host, number


def browse_url(host: str, port: int) -> str:
    """The URL a person on this machine opens: a wildcard bind is reached through loopback."""
    host = {"0.0.0.0": "127.0.0.1", "::": "::1"}.get(host, host)
    return f"http://[{host}]:{port}" if ":" in host else f"http://{host}:{port}"


def bind(host: str, port: int) -> socket.socket:
    """The listening socket gunicorn inherits: binding here makes a busy port fail before anything
    started, and lets a restarted gunicorn take over the same socket with no gap."""
    try:
        family, kind, proto, _name, address = socket.getaddrinfo(host, port, type=socket.SOCK_STREAM)[0]
        listener = socket.socket(family, kind, proto)
    except (OSError, UnicodeError) as exc:
        raise StartFailed(f"cannot listen on {host}:{port} ({exc}); check the address.") from None
    try:
        listener.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)
        listener.bind(address)
        listener.listen(128)
    except OSError as exc:
        listener.close()
        reason = "the port is in use by another program" if exc.errno == 98 else exc.strerror
        raise StartFailed(
            f"cannot listen on {host}:{port} ({reason}); stop the other server or pick another port, "
            f"e.g. manage.py serve {port + 1}."
        ) from None
    listener.set_inheritable(True)
    return listener


DEMO_PREFIX = "/demo/"


def allow_own_address(base_url: str) -> None:
    """Allow HTTP Request to reach this site's demo endpoints, in this process and the processes it
    starts (KEEPERSTATE_HTTP_ALLOW gains ``host:port/demo/``), so the demo monitor can call the
    demo chain and alert sink served here. Only that path of that port (ADR 0040): the admin, the
    API and the rest of the machine stay blocked to every organization's workflows."""
    own = base_url.split("://", 1)[1] + DEMO_PREFIX
    allowed = env_list("KEEPERSTATE_HTTP_ALLOW")
    if own not in allowed:
        os.environ["KEEPERSTATE_HTTP_ALLOW"] = ",".join([*allowed, own])
        settings.KEEPERSTATE_HTTP_ALLOW = [*settings.KEEPERSTATE_HTTP_ALLOW, own]


class Command(BaseCommand):
    help = (
        "Migrate, seed the demo once, and run the site under gunicorn plus one worker, supervised. "
        "On the embedded database the demo user's password is set (at creation) and printed."
    )

    def add_arguments(self, parser: CommandParser) -> None:
        parser.add_argument("addrport", nargs="?", default="127.0.0.1:8000", help="port, or address:port, to serve on")
        parser.add_argument(
            "--no-demo", action="store_true", help="leave the demo app out: no demo data, no /demo/ endpoints"
        )
        parser.add_argument("--web-workers", type=int, default=2, help="gunicorn worker processes (default 2)")
        parser.add_argument("--threads", type=int, default=4, help="threads per gunicorn worker (default 4)")

    def handle(self, *args: Any, **options: Any) -> None:
        try:
            host, port = parse_addrport(options["addrport"])
            listener = bind(host, port)
            # Before the first line of output: an embedded Postgres that cannot start is the
            # one line serve prints, like a busy port.
            connections["default"].ensure_connection()
        except (StartFailed, database.StartupError) as exc:
            sys.stderr.write(f"KeeperState cannot start: {exc}\n")
            sys.exit(1)  # through atexit: this process leaves the embedded server's list of users
        base = browse_url(host, port)
        self.stdout.write("KeeperState is starting: migrating, collecting static files, starting its processes…")
        try:
            call_command("migrate", interactive=False, verbosity=0)
            call_command("collectstatic", interactive=False, verbosity=0)
            # manage.py installs the demo app for serve unless --no-demo (or KEEPERSTATE_DEMO=false)
            wanted = apps.is_installed("keeperstate.demo") and not options["no_demo"]
            if wanted:
                allow_own_address(base)  # before the children start: they inherit the environment
            demo_lines = self._seed(base) if wanted else []
        except KeyboardInterrupt:
            self.stdout.write("KeeperState stopped before it started.")
            return
        # serve itself needs the database no more: an idle connection held for days would only
        # break with the server and keep a backend busy meanwhile.
        connections.close_all()

        # 30 s to stop: a worker lets its running executions finish (an HTTP Request node may take 30 s).
        supervisor = Supervisor(
            self._children(listener, options["web_workers"], options["threads"]), log=self._log, stop_timeout=30
        )
        try:
            supervisor.start_all()
            self._wait_until_listening(host, port, supervisor)
            self.stdout.write(self._banner(base, supervisor, demo_lines))
            self._supervise(supervisor)
        except (KeyboardInterrupt, SystemExit):  # Ctrl-C, or SIGTERM through exit_on_sigterm
            pass
        except (GaveUp, StartFailed) as exc:
            sys.stderr.write(f"KeeperState stopped: {exc}\n")
            sys.exit(1)
        finally:
            supervisor.stop_all()
            listener.close()
        self.stdout.write("KeeperState stopped.")

    def _children(self, listener: socket.socket, web_workers: int, threads: int = 4) -> list[ChildSpec]:
        fd = listener.fileno()
        gunicorn = [
            sys.executable, "-m", "gunicorn", "keeperstate.wsgi:application",
            "--config", "python:keeperstate.ops.gunicorn_conf",  # no Server header
            "--bind", f"fd://{fd}",
            "--chdir", str(settings.BASE_DIR),
            "--workers", str(max(1, web_workers)),
            # Threads, so a webhook waiting for its run (?wait=30) does not hold a whole process.
            "--threads", str(max(1, threads)),
            # A synchronous run may wait on HTTP Request actions (≤ 30 s each).
            "--timeout", "60",
            "--graceful-timeout", "10",
            "--log-level", "warning",
        ]
        children = [ChildSpec("web server (gunicorn)", gunicorn, pass_fds=(fd,))]
        # The worker runs queued executions, the scheduler and housekeeping; started once the
        # command exists in this checkout.
        if "worker" in get_commands():
            id_file = Path(tempfile.mkdtemp(prefix="keeperstate-serve-")) / "worker-id"
            children.append(ChildSpec(
                "worker", [sys.executable, str(settings.BASE_DIR / "manage.py"), "worker"],
                env={"KEEPERSTATE_WORKER_ID_FILE": str(id_file)},
                on_death=functools.partial(self._close_runs_of_dead_worker, id_file),
            ))
        return children

    def _close_runs_of_dead_worker(self, id_file: Path) -> None:
        """The worker died: close the runs it had started as interrupted now, not after
        KEEPERSTATE_RUN_STALE_SECONDS (its id in Procrastinate's registry of workers names them)."""
        try:
            worker_id = int(id_file.read_text())
        except (OSError, ValueError):
            return  # it died before it registered: it had started nothing
        id_file.unlink(missing_ok=True)
        try:
            closed = interrupt_runs_of_worker(worker_id)
        finally:
            connections.close_all()
        if closed:
            self._log(f"closed {closed} run(s) of the dead worker as interrupted")

    def _seed(self, base: str) -> list[str]:
        """The demo app seeds itself (keeperstate.demo.apps) and says what the banner shows of it."""
        demo: Any = apps.get_app_config("demo")  # keeperstate.demo.apps.DemoConfig
        return demo.seed_for_serve(base, embedded=database.using_embedded())

    def _wait_until_listening(self, host: str, port: int, supervisor: Supervisor) -> None:
        target = {"0.0.0.0": "127.0.0.1", "::": "::1"}.get(host, host)
        deadline = time.monotonic() + READY_TIMEOUT_SECONDS
        while time.monotonic() < deadline:
            if (child := supervisor.first_exited()) is not None:
                raise StartFailed(f"the {child.spec.name} exited with code {child.exit_code} while starting")
            connection = http.client.HTTPConnection(target, port, timeout=2)
            try:
                connection.request("GET", "/healthz")
                connection.getresponse().read()
                return  # any answer: gunicorn is serving
            except (OSError, http.client.HTTPException):  # not listening yet, or closed on us
                time.sleep(0.2)
            finally:
                connection.close()
        raise StartFailed(f"the web server did not answer on {host}:{port} within {READY_TIMEOUT_SECONDS:.0f} s")

    def _banner(self, base: str, supervisor: Supervisor, demo_lines: list[str]) -> str:
        started = [f"{c.spec.name} pid {c.process.pid}" for c in supervisor.children if c.process is not None]
        if (pg_pid := database.embedded_server_pid()) is not None:
            started.append(f"embedded Postgres pid {pg_pid} ({database.DATA_DIR / 'postgres'})")
        return (
            "\nKeeperState is running:\n"
            f"  editor:         {base}/builder/\n"
            f"  admin:          {base}/admin/\n"
            f"  API docs:       {base}/api/docs/\n"
            f"  MCP (agents):   {base}/mcp/  (Authorization: Bearer <API token>)\n"
            + "".join(f"{line}\n" for line in demo_lines)
            + "".join(f"  started:        {what}\n" for what in started)
            + "  stop with Ctrl-C\n"
        )

    def _supervise(self, supervisor: Supervisor) -> None:
        down_since: float | None = None
        while True:
            time.sleep(TICK_SECONDS)
            supervisor.restart_exited()
            if database.embedded_server_running():
                down_since = None
                continue
            down_since = down_since or time.monotonic()
            try:
                database.restart_embedded_server()
            except database.StartupError:
                continue  # its old backends still hold its memory for a moment; next tick
            self._log(
                f"the embedded Postgres had stopped; restarted it (pid {database.embedded_server_pid()}, "
                f"down about {time.monotonic() - down_since:.0f} s)"
            )
            down_since = None

    def _log(self, message: str) -> None:
        self.stderr.write(f"[serve] {message}")
