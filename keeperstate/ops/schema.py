"""What a command that reads KeeperState's tables checks first."""

from __future__ import annotations

from django.core.management.base import CommandError
from django.db import connection
from django.db.migrations.executor import MigrationExecutor


def require_migrated() -> None:
    """Refuse, in one sentence, to run on a database whose migrations are not all applied: the
    command would otherwise fail halfway with the driver's "relation … does not exist"."""
    executor = MigrationExecutor(connection)
    pending = executor.migration_plan(executor.loader.graph.leaf_nodes())
    if pending:
        raise CommandError(
            f"The database is missing {len(pending)} migration(s). Run `python manage.py migrate` "
            "first (`manage.py serve` migrates on its own), then run this command again."
        )
