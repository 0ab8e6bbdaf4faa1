"""What the demo's "alerts" endpoint received (keeperstate.demo_feed): a stand-in for a chat or
paging service, so the demo Block monitor has somewhere real to send its alerts."""

from __future__ import annotations

from django.db import models


class DemoAlert(models.Model):
    received_at = models.DateTimeField(auto_now_add=True, db_index=True)
    payload = models.JSONField()

    class Meta:
        db_table = "demo_alert"
        ordering = ["-received_at", "-id"]

    def __str__(self) -> str:
        return f"alert {self.pk} at {self.received_at:%H:%M:%S}"
