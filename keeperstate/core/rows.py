"""Model instances from statements written once, for the reads on every API request's path.

Django compiles a queryset anew each time it runs. For the API token with its user, or a
workflow checked against the user's memberships, that is about 1 ms of Python per request,
several times the statement itself. The few statements every request sends are therefore
written once here; their column lists come from the models (a new field is read too), and each
row becomes the instance a queryset would return, through the fields' own converters and
``Model.from_db``.
"""

from __future__ import annotations

from typing import Any, Generic, TypeVar

from django.db import DEFAULT_DB_ALIAS, connections
from django.db.models import Model

M = TypeVar("M", bound=Model)


class Columns(Generic[M]):
    """A model's concrete columns under a table alias, and the instance one row of them makes."""

    def __init__(self, model: type[M], alias: str):
        self.model = model
        self.fields = model._meta.concrete_fields
        self.attnames = [field.attname for field in self.fields]
        self.table = f'"{model._meta.db_table}" {alias}'
        self.sql = ", ".join(f'{alias}."{field.column}"' for field in self.fields)

    def __len__(self) -> int:
        return len(self.fields)

    def instance(self, values: tuple[Any, ...] | list[Any], using: str = DEFAULT_DB_ALIAS) -> M:
        connection = connections[using]
        converted = []
        for field, value in zip(self.fields, values, strict=True):
            # e.g. JSONField decodes its text here, as it does for a queryset
            for converter in field.get_db_converters(connection):  # type: ignore[attr-defined]  # not in the stubs
                value = converter(value, None, connection)
            converted.append(value)
        return self.model.from_db(using, self.attnames, converted)
