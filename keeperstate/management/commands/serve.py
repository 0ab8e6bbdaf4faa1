"""Set up and run KeeperState locally: database, migrations, demo data, web server."""

from __future__ import annotations

import signal
import sys
from typing import Any

from django.core.management import call_command
from django.core.management.base import BaseCommand

from keeperstate.database import using_embedded
from keeperstate.demo import DEMO_PASSWORD, DEMO_USERNAME, MONITOR_NAME, ensure_demo


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
        if not options["no_demo"]:
            _org, _user, workflow = ensure_demo(password=DEMO_PASSWORD if embedded else None)
            lines.append(f"  demo workflow:  '{MONITOR_NAME}' ({workflow.id})")
            if embedded:
                lines.append(f"  log in as:      {DEMO_USERNAME} / {DEMO_PASSWORD}")
            else:
                lines.append(f"  log in:         set a password first: python manage.py changepassword {DEMO_USERNAME}")
        base = "http://" + options["addrport"].replace("0.0.0.0", "127.0.0.1")
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
