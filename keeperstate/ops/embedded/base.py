"""The embedded backend's DatabaseWrapper: the service's (keeperstate.ops.postgres), with the start on
the first connection."""

from __future__ import annotations

from collections.abc import Iterable
from typing import Any

from django.db.backends.postgresql.client import DatabaseClient as PostgresqlClient

from keeperstate.ops import database
from keeperstate.ops.postgres import base as postgres


def fill_address(settings_dict: dict[str, Any]) -> None:
    """Give ``settings_dict`` the embedded server's HOST and PORT, starting or joining it first;
    once: a HOST set already (filled, or a test's unreachable address) is left as it is."""
    if not settings_dict.get("HOST"):
        settings_dict.update(database.embedded_address())


class DatabaseClient(PostgresqlClient):
    """``manage.py dbshell``: psql on the embedded server's socket."""

    def runshell(self, parameters: Iterable[str]) -> None:
        fill_address(self.connection.settings_dict)
        super().runshell(parameters)


class DatabaseWrapper(postgres.DatabaseWrapper):
    client_class = DatabaseClient

    def get_connection_params(self) -> dict[str, Any]:
        # Every connection comes through here, and so does Procrastinate's worker, which reads
        # these parameters for its own pool. The settings dict is the one in settings.DATABASES
        # (Django's copies for the test database get their own fill).
        fill_address(self.settings_dict)
        return super().get_connection_params()
