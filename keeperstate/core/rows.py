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
from django.db.models import NOT_PROVIDED, Model, signals

from keeperstate.core.cursors import kept_cursor
from keeperstate.core.sharding import KeepsOrganization

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


class Insert(Generic[M]):
    """``instance.save(force_insert=True)`` of a model as one statement written once: every
    concrete column, each value adapted by its own field (``pre_save``, ``get_db_prep_save``),
    as Django's save adapts it. For a row every run writes (an execution), where compiling the
    ORM's insert cost more Python than the statement.

    What it would leave out of Django's save is left to the ORM instead: a model with a field
    whose value the database makes (``db_default``, generated) or with save signal receivers is
    saved by ``save()``."""

    def __init__(self, model: type[M]):
        self.model = model
        self.fields = model._meta.concrete_fields
        self.by_database = any(field.generated or field.db_default is not NOT_PROVIDED for field in self.fields)
        columns = ", ".join(f'"{field.column}"' for field in self.fields)
        placeholders = ", ".join(["%s"] * len(self.fields))
        self.sql = f'INSERT INTO "{model._meta.db_table}" ({columns}) VALUES ({placeholders})'

    @property
    def by_orm(self) -> bool:
        """Whether ``save`` leaves the insert to the ORM (see the class's docstring)."""
        return self.by_database or signals.pre_save.has_listeners(self.model) or signals.post_save.has_listeners(
            self.model
        )

    def values(self, instance: M, using: str = DEFAULT_DB_ALIAS) -> list[Any]:
        """The row's values in column order, each adapted by its own field, as ``self.sql`` takes them."""
        connection = connections[using]
        return [field.get_db_prep_save(field.pre_save(instance, True), connection) for field in self.fields]

    def save(self, instance: M, using: str = DEFAULT_DB_ALIAS) -> None:
        if self.by_orm:
            instance.save(force_insert=True, using=using)
            return
        kept_cursor(connections[using]).execute(self.sql, self.values(instance, using))
        saved(instance, using)


def saved(instance: Model, using: str = DEFAULT_DB_ALIAS) -> None:
    """Mark an instance written by a statement of ours as a saved row, as Django's save would."""
    instance._state.adding, instance._state.db = False, using
    if isinstance(instance, KeepsOrganization):  # what its save() remembers
        instance._stored_organization_id = instance.__dict__.get("organization_id")
