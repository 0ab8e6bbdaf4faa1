"""The audit log: who did what, when, from which address. Append-only in the database."""

from __future__ import annotations

import pgtrigger
from django.db import models
from django.db.models.functions import Now

from keeperstate.accounts.models import Organization


class AuditEvent(models.Model):
    created_at = models.DateTimeField(db_default=Now(), editable=False)
    action = models.CharField(max_length=40)  # e.g. "workflow.update"; README lists them
    # Plain ids and names rather than cascading foreign keys: a row outlives the user, the
    # organization and the object it names, and deleting those must not rewrite the log.
    actor_id = models.BigIntegerField(null=True, blank=True)
    actor_name = models.CharField(max_length=150, blank=True, default="")
    organization = models.ForeignKey(
        Organization, on_delete=models.DO_NOTHING, db_constraint=False, null=True, blank=True, related_name="+"
    )
    target_type = models.CharField(max_length=40, blank=True, default="")
    target_id = models.CharField(max_length=100, blank=True, default="")
    target_repr = models.CharField(max_length=200, blank=True, default="")
    address = models.GenericIPAddressField(null=True, blank=True)
    details = models.JSONField(default=dict, blank=True)

    class Meta:
        db_table = "audit_event"
        ordering = ["-created_at", "-id"]
        indexes = [
            models.Index(fields=["organization", "-created_at"], name="audit_org_created"),
            models.Index(fields=["action", "-created_at"], name="audit_action_created"),
        ]
        triggers = [
            # Whoever writes (admin, raw SQL, a data migration): rows are added, never changed
            # or removed. Purging old rows is a deliberate act: disable the trigger in a migration.
            pgtrigger.Protect(name="audit_event_append_only", operation=pgtrigger.Update | pgtrigger.Delete),
        ]

    def __str__(self) -> str:
        return f"{self.created_at:%Y-%m-%d %H:%M:%S} {self.actor_name or 'system'} {self.action} {self.target_repr}"
