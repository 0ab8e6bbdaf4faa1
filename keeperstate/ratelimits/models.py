"""Counters of the rate limits: one row per (scope, who, window), counted by one upsert."""

from __future__ import annotations

from django.db import models


class RateCounter(models.Model):
    pk = models.CompositePrimaryKey("scope", "ident", "window_start")
    scope = models.CharField(max_length=40)  # e.g. "org_runs", "api_user", "api_anon", "auth_failure"
    ident = models.CharField(max_length=100)  # an organization id, a user or token, an address
    window_start = models.DateTimeField()
    hits = models.PositiveIntegerField()

    class Meta:
        db_table = "rate_counter"

    def __str__(self) -> str:
        return f"{self.scope}:{self.ident} @ {self.window_start:%H:%M:%S}: {self.hits}"
