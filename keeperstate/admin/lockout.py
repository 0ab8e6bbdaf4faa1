"""django-axes' pages (Access attempts, Access logs, Access failure logs), for superusers only.

Their rows are every tenant's logins: usernames tried and addresses, with no organization to scope
them by, so staff who administer one organization must not see them (axes registers them for any
staff with the model permission; AXES_ENABLE_ADMIN = False leaves the registering to this module).
"""

from __future__ import annotations

from typing import Any

from axes import admin as axes_admin
from axes.models import AccessAttempt, AccessFailureLog, AccessLog
from django.contrib import admin


class SuperuserOnly:
    def has_module_permission(self, request: Any) -> bool:
        return bool(request.user.is_active and request.user.is_superuser)

    def has_view_permission(self, request: Any, obj: Any = None) -> bool:
        return self.has_module_permission(request)

    def has_change_permission(self, request: Any, obj: Any = None) -> bool:
        return self.has_module_permission(request)

    def has_delete_permission(self, request: Any, obj: Any = None) -> bool:
        return self.has_module_permission(request)

    def has_add_permission(self, request: Any, obj: Any = None) -> bool:
        return False


@admin.register(AccessAttempt)
class AccessAttemptAdmin(SuperuserOnly, axes_admin.AccessAttemptAdmin):
    pass


@admin.register(AccessLog)
class AccessLogAdmin(SuperuserOnly, axes_admin.AccessLogAdmin):
    pass


@admin.register(AccessFailureLog)
class AccessFailureLogAdmin(SuperuserOnly, axes_admin.AccessFailureLogAdmin):
    pass
