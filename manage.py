#!/usr/bin/env python
"""Django's command-line utility for KeeperState."""

import os
import sys


def main() -> None:
    os.environ.setdefault("DJANGO_SETTINGS_MODULE", "keeperstate.settings")
    if sys.argv[1:2] == ["serve"] and "--no-demo" not in sys.argv:
        # `serve` is the demo's way in: it installs the demo app (here, before settings load) for
        # itself and the processes it starts, which inherit the environment.
        os.environ.setdefault("KEEPERSTATE_DEMO", "true")
    from django.core.management import execute_from_command_line

    from keeperstate.ops.database import StartupError, exit_on_sigterm, tidy_embedded_users_at_exit
    from keeperstate.ops.env import InvalidEnvironment

    # SIGTERM (a supervisor, `kill`, Ctrl-C's sibling) exits through atexit like Ctrl-C does, so
    # runserver, the worker and every other command leave the embedded Postgres' list of users
    # and the last one stops it; a command that never connected still drops the children it saw
    # die from that list.
    exit_on_sigterm()
    tidy_embedded_users_at_exit()

    try:
        execute_from_command_line(sys.argv)
    except (StartupError, InvalidEnvironment) as exc:
        # A value in the environment it cannot read, or an embedded Postgres that cannot start
        # (at the first connection): one readable line, not a traceback.
        sys.stderr.write(f"KeeperState cannot start: {exc}\n")
        sys.exit(1)  # through atexit: this process leaves the embedded server's list of users


if __name__ == "__main__":
    main()
