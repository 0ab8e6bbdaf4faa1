"""Rows that belong to one organization for good: the tables shard by ``organization_id``
(docs/scaling.md), and a distributed database cannot change a row's shard column.

``KeepsOrganization`` makes Django's ``save()`` of an existing row leave ``organization_id`` out
of its UPDATE (Django writes every field otherwise) and name it in the UPDATE's WHERE (so the
statement goes to the row's one shard, not to all of them by id), and refuses a changed
organization in one sentence instead of moving the row. A workflow's move to another organization is a copy then a
delete in one transaction, not an UPDATE of the key (keeperstate/workflows/move.py, ADR 0059).
"""

from __future__ import annotations

import re
from typing import Any

from django.db import models


def names_constraint(error: Any, constraint: str) -> bool:
    """Whether a database error (psycopg's, e.g. ``exc.__cause__``) names ``constraint``. On a
    sharded database the error names the shard's copy of it, the name and the shard's id
    (``workflow_state_workflow_org_fk_102058``), and an error raised on a worker reaches the client
    with its message only, the constraint's name in quotes there."""
    name = getattr(getattr(error, "diag", None), "constraint_name", None)
    if not name:
        found = re.search(r'constraint "([^"]+)"', str(error))
        name = found.group(1) if found else ""
    return name == constraint or re.fullmatch(rf"{re.escape(constraint)}_\d+", name) is not None


class OrganizationChanged(ValueError):
    """A saved row's organization was changed: rows never move between organizations."""


class KeepsOrganization(models.Model):
    class Meta:
        abstract = True

    @classmethod
    def from_db(cls, db: Any, field_names: Any, values: Any) -> Any:
        instance = super().from_db(db, field_names, values)
        instance._stored_organization_id = instance.__dict__.get("organization_id")
        return instance

    def save(self, *args: Any, **kwargs: Any) -> None:
        if not self._state.adding and not kwargs.get("force_insert"):
            stored = getattr(self, "_stored_organization_id", None)
            if stored is not None and self.__dict__.get("organization_id") != stored:
                raise OrganizationChanged(
                    f"{self._meta.verbose_name} {self.pk} belongs to organization {stored} and cannot be moved to "
                    "another one by saving it; move a workflow with keeperstate.workflows.move (Django admin: Move to "
                    "organization…), which carries its rows along."
                )
            if kwargs.get("update_fields") is None:
                kwargs["update_fields"] = [
                    field.name for field in self._meta.concrete_fields
                    if not field.primary_key and not field.generated and field.column != "organization_id"
                ]
        super().save(*args, **kwargs)
        self._stored_organization_id = self.__dict__.get("organization_id")

    def _do_update(self, base_qs: Any, *args: Any, **kwargs: Any) -> Any:
        # Django's update of a saved row finds it by pk alone: the organization routes it.
        organization = getattr(self, "_stored_organization_id", None) or self.__dict__.get("organization_id")
        if organization is not None:
            base_qs = base_qs.filter(organization_id=organization)
        return super()._do_update(base_qs, *args, **kwargs)
