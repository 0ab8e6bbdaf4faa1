"""Who may do what with a workflow they can see.

Seeing is decided by keeperstate.accounts.access (another organization's workflow is a 404, never a
403). Among the workflows a user sees, members read, create, edit and run; only owners and
admins hard-delete, and a member who tries gets 403: the workflow is visible to them anyway.
"""

from __future__ import annotations

from typing import Any

from rest_framework.permissions import BasePermission

from keeperstate.accounts.access import can_hard_delete


class HardDeleteByOwnersAndAdmins(BasePermission):
    message = "Only owners and admins of the workflow's organization can hard-delete it; a soft delete is allowed."

    def has_object_permission(self, request: Any, view: Any, obj: Any) -> bool:
        if getattr(view, "action", None) != "destroy" or not view.hard_delete_requested():
            return True
        return can_hard_delete(request.user, obj)
