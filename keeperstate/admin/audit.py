"""The audit log, read-only (the database refuses changes anyway)."""

from __future__ import annotations

from typing import Any

from django.contrib import admin

from keeperstate.admin.scoping import TenantScopedAdmin
from keeperstate.audit.models import AuditEvent


@admin.register(AuditEvent)
class AuditEventAdmin(TenantScopedAdmin):
    """Read-only: the database refuses changes anyway (append-only trigger)."""

    list_display = ["created_at", "action", "actor_name", "organization", "target_type", "target_repr", "address"]
    list_filter = ["action", "organization"]
    search_fields = ["actor_name", "target_repr", "target_id", "address"]
    date_hierarchy = "created_at"
    readonly_fields = ["created_at", "action", "actor_id", "actor_name", "organization", "target_type", "target_id",
                       "target_repr", "address", "details"]
    fields = list(readonly_fields)

    def has_add_permission(self, request: Any) -> bool:
        return False

    def has_change_permission(self, request: Any, obj: Any = None) -> bool:
        return False

    def has_delete_permission(self, request: Any, obj: Any = None) -> bool:
        return False
