"""Django's users and groups in admin, scoped like every other admin page (ADR 0074).

Superusers see and change every user and group. Staff who are not superusers:

* see the users who are members of an organization they own or administer (and themselves);
  superusers are never in their view;
* change (details, password, active flag) or delete only those of them whose *every* membership
  is in such an organization and who are not staff, and themselves: setting the password of
  someone who also belongs elsewhere, or of another staff account, would take over what that
  account may do beyond their organizations;
* never grant superuser, staff, groups or permissions: those fields are read-only for them, and
  groups (which carry permissions) are for superusers only;
* create a user only into one of their organizations (the add form asks which, and the role), so
  the new account is theirs to manage from its first moment; choosing a user for a membership
  lists only the users in their view.
"""

from __future__ import annotations

from typing import Any

from django import forms
from django.contrib import admin
from django.contrib.auth import get_user_model
from django.contrib.auth.admin import GroupAdmin, UserAdmin
from django.contrib.auth.forms import AdminUserCreationForm
from django.contrib.auth.models import Group
from django.db import transaction
from django.db.models import Exists, OuterRef, Q, QuerySet

from keeperstate.accounts.access import administered_organizations
from keeperstate.accounts.models import Membership, Organization

User = get_user_model()
PRIVILEGES = ("is_superuser", "is_staff", "groups", "user_permissions")

# Django's own pages for both (django.contrib.auth.admin, found first: auth precedes us in
# INSTALLED_APPS) are replaced by the scoped ones below.
for model in (User, Group):
    if admin.site.is_registered(model):
        admin.site.unregister(model)


def sees_every_user(request: Any) -> bool:
    return bool(request.user.is_active and request.user.is_superuser)


def users_in_view(staff: Any) -> QuerySet[Any]:
    """The users a non-superuser staff member sees: members of an organization it administers,
    superusers left out, and itself."""
    administered = administered_organizations(staff)
    members = Membership.objects.filter(user=OuterRef("pk"), organization__in=administered)
    return User.objects.filter(Q(pk=staff.pk) | (Q(Exists(members)) & Q(is_superuser=False)))


def users_it_manages(staff: Any) -> QuerySet[Any]:
    """Of those, the ones it may change: no membership outside its organizations, not staff
    (itself excepted)."""
    elsewhere = Membership.objects.filter(user=OuterRef("pk")).exclude(
        organization__in=administered_organizations(staff))
    return users_in_view(staff).filter(Q(pk=staff.pk) | (~Q(Exists(elsewhere)) & Q(is_staff=False)))


class TenantUserCreationForm(AdminUserCreationForm):
    """Django's add form, with the organization the new user joins and its role there."""

    organization = forms.ModelChoiceField(
        queryset=Organization.objects.none(), required=False,
        help_text="The organization the user joins. Staff who are not superusers must pick one of theirs.")
    role = forms.ChoiceField(choices=Membership.Role.choices, initial=Membership.Role.MEMBER)


@admin.register(Group)
class SuperuserGroupAdmin(GroupAdmin):
    """Groups grant permissions across every organization: superusers only."""

    def has_module_permission(self, request: Any) -> bool:
        return sees_every_user(request)

    def has_view_permission(self, request: Any, obj: Any = None) -> bool:
        return sees_every_user(request)

    def has_add_permission(self, request: Any) -> bool:
        return sees_every_user(request)

    def has_change_permission(self, request: Any, obj: Any = None) -> bool:
        return sees_every_user(request)

    def has_delete_permission(self, request: Any, obj: Any = None) -> bool:
        return sees_every_user(request)


@admin.register(User)
class TenantUserAdmin(UserAdmin):
    add_form = TenantUserCreationForm
    add_fieldsets = (
        (None, {"classes": ("wide",),
                "fields": ("username", "usable_password", "password1", "password2", "organization", "role")}),
    )

    def get_queryset(self, request: Any) -> Any:
        queryset = super().get_queryset(request)
        if sees_every_user(request):
            return queryset
        return queryset.filter(pk__in=users_in_view(request.user).values("pk"))

    def manages(self, request: Any, obj: Any) -> bool:
        return obj is None or sees_every_user(request) or users_it_manages(request.user).filter(pk=obj.pk).exists()

    def has_change_permission(self, request: Any, obj: Any = None) -> bool:
        return super().has_change_permission(request, obj) and self.manages(request, obj)

    def has_delete_permission(self, request: Any, obj: Any = None) -> bool:
        return super().has_delete_permission(request, obj) and self.manages(request, obj)

    def get_readonly_fields(self, request: Any, obj: Any = None) -> Any:
        readonly = tuple(super().get_readonly_fields(request, obj))
        return readonly if sees_every_user(request) else readonly + PRIVILEGES

    def get_list_filter(self, request: Any) -> Any:
        filters = super().get_list_filter(request)
        return filters if sees_every_user(request) else [f for f in filters if f != "groups"]

    def get_form(self, request: Any, obj: Any = None, change: bool = False, **kwargs: Any) -> Any:
        form = super().get_form(request, obj, change=change, **kwargs)
        if obj is None and "organization" in form.base_fields:
            field: Any = form.base_fields["organization"]
            everyone = sees_every_user(request)
            field.queryset = Organization.objects.all() if everyone else administered_organizations(request.user)
            field.required = not everyone
        return form

    def save_model(self, request: Any, obj: Any, form: Any, change: bool) -> None:
        # The privileges are read-only fields for staff who are not superusers, so their form holds
        # none and a posted is_superuser=on is ignored.
        with transaction.atomic():
            super().save_model(request, obj, form, change)
            organization = form.cleaned_data.get("organization") if not change else None
            if organization is not None:
                Membership.objects.create(user=obj, organization=organization, role=form.cleaned_data["role"])
