"""The demo app's tables: what its "alerts" endpoint received (keeperstate.demo.feed), and the
markers of demo data already created, so `manage.py serve` seeds each piece once."""

from __future__ import annotations

from django.db import models

DEDUP_KEY_MAX = 255  # as PagerDuty's dedup_key


class DemoAlert(models.Model):
    received_at = models.DateTimeField(auto_now_add=True, db_index=True)
    payload = models.JSONField()
    # The alert's dedupKey: a second alert with one already kept is not kept again (the database
    # holds it: a unique column, where alerts without a key, NULL, never collide).
    dedup_key = models.CharField(max_length=DEDUP_KEY_MAX, null=True, blank=True, unique=True)

    class Meta:
        db_table = "demo_alert"
        ordering = ["-received_at", "-id"]

    def __str__(self) -> str:
        return f"alert {self.pk} at {self.received_at:%H:%M:%S}"


class DemoSeed(models.Model):
    """One row per piece of demo data ever created (``organization``, ``user``, a workflow's key).

    Seeding skips any piece with a row here: a demo workflow a person renamed or deleted is not
    created again, and the demo user's password is set only when the user is created. The
    workflow is referenced by id without a foreign key, so deleting it (by any means, raw SQL
    included) never has to consider this table; the id just stops resolving.
    """

    key = models.CharField(max_length=100, unique=True)
    workflow_id = models.UUIDField(null=True, blank=True)
    created_at = models.DateTimeField(auto_now_add=True)

    class Meta:
        db_table = "demo_seed"

    def __str__(self) -> str:
        return self.key
