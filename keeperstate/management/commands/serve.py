"""Set up and run KeeperState locally: database, migrations, demo data, web server."""

from __future__ import annotations

import os
import signal
import sys
from typing import Any

from django.conf import settings
from django.core.management import call_command
from django.core.management.base import BaseCommand

from keeperstate.database import using_embedded
from keeperstate.demo import DEMO_PASSWORD, DEMO_USERNAME, MONITOR_NAME, ensure_demo


def allow_own_address(addrport: str) -> str:
    """The site's own base URL, allowed to HTTP Request in this process and the processes it
    starts (KEEPERSTATE_HTTP_ALLOW gains ``host:port``), so the demo monitor can call the demo
    feed and alerts endpoints this server serves. Only that port: the rest of the machine stays
    blocked."""
    host, _, port = addrport.rpartition(":")
    host = {"": "127.0.0.1", "0.0.0.0": "127.0.0.1", "[::]": "[::1]"}.get(host, host)
    own = f"{host}:{port or '8000'}"
    allowed = [h for h in os.environ.get("KEEPERSTATE_HTTP_ALLOW", "").split(",") if h.strip()]
    if own not in allowed:
        allowed.append(own)
        os.environ["KEEPERSTATE_HTTP_ALLOW"] = ",".join(allowed)
        settings.KEEPERSTATE_HTTP_ALLOW = [*settings.KEEPERSTATE_HTTP_ALLOW, own]
    return f"http://{own}"


class Command(BaseCommand):
    help = (
        "Migrate, create the demo organization, user and 'Block monitor' workflow, and serve the site. "
        "On the embedded database the demo user's password is set and printed; with DATABASE_URL it is not."
    )

    def add_arguments(self, parser: Any) -> None:
        parser.add_argument("addrport", nargs="?", default="127.0.0.1:8000", help="address:port to serve on")
        parser.add_argument("--no-demo", action="store_true", help="do not create the demo data")

    def handle(self, *args: Any, **options: Any) -> None:
        call_command("migrate", interactive=False, verbosity=0)
        self.stdout.write("database migrated")
        embedded = using_embedded()
        lines = []
        base = allow_own_address(options["addrport"])
        if not options["no_demo"]:
            _org, _user, workflow = ensure_demo(password=DEMO_PASSWORD if embedded else None, base_url=base)
            lines.append(f"  demo workflow:  '{MONITOR_NAME}' ({workflow.id})")
            lines.append(f"  demo alerts:    {base}/demo/alerts/  (block feed: {base}/demo/feed/)")
            if embedded:
                lines.append(f"  log in as:      {DEMO_USERNAME} / {DEMO_PASSWORD}")
            else:
                lines.append(f"  log in:         set a password first: python manage.py changepassword {DEMO_USERNAME}")
        self.stdout.write(
            "\nKeeperState is starting:\n"
            f"  editor:         {base}/builder/\n"
            f"  admin:          {base}/admin/\n"
            f"  API docs:       {base}/api/docs/\n" + "\n".join(lines) + "\n"
            "  stop with Ctrl-C\n"
        )
        # SIGTERM exits through atexit too, which stops the embedded Postgres this process started.
        signal.signal(signal.SIGTERM, lambda *_: sys.exit(0))
        # No autoreloader: a second process would start a second server and seed twice.
        call_command("runserver", options["addrport"], use_reloader=False, insecure_serving=True)
