"""Lay a migrated database out on Citus (docs/scaling.md): reference tables, the workflow family
distributed by organization and co-located, the store's functions on their organization's shard."""

from __future__ import annotations

from typing import Any

from django.core.management.base import BaseCommand, CommandError
from django.db import connection

from keeperstate.ops import citus
from keeperstate.ops.schema import require_migrated


class Command(BaseCommand):
    help = (
        "Distribute the migrated database on its Citus cluster, as docs/scaling.md says, in one transaction. "
        "With --check: print the statements still to run and exit 1 if there are any (0: laid out)."
    )

    def add_arguments(self, parser: Any) -> None:
        parser.add_argument("--check", action="store_true", help="print the statements still to run; change nothing")

    def handle(self, *args: Any, **options: Any) -> None:
        require_migrated()
        with connection.cursor() as cursor:
            try:
                citus.require_coordinator(cursor)
            except citus.NotACoordinator as exc:
                raise CommandError(str(exc)) from None
            steps = citus.plan(cursor)
            if not steps:
                self.stdout.write("The database is laid out for Citus: nothing to do.")
                return
            for step in steps:
                self.stdout.write(step.sql)
            if options["check"]:
                raise CommandError(f"{len(steps)} statement(s) of the Citus layout still to run (printed above).")
            citus.run(cursor, steps)
        self.stdout.write(f"Laid out: {len(steps)} statement(s) run in one transaction.")
