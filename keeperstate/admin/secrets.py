"""Organization secrets in Django admin: write-only. The list shows names and dates; the form
takes a new value (blank on change keeps the old one) and never shows the stored one."""

from __future__ import annotations

from typing import Any

from django import forms
from django.contrib import admin

from keeperstate.admin.scoping import TenantScopedAdmin
from keeperstate.core.errors import form_checked
from keeperstate.secrets.models import OrganizationSecret
from keeperstate.secrets.names import check_name, check_value
from keeperstate.secrets.store import secret_put


class OrganizationSecretForm(forms.ModelForm):
    value = forms.CharField(
        required=False,
        strip=False,
        widget=forms.PasswordInput(render_value=False, attrs={"autocomplete": "new-password"}),
        help_text="Stored encrypted and never shown again. On change, leave it empty to keep the current value.",
    )

    class Meta:
        model = OrganizationSecret
        fields = ["organization", "name"]

    def clean_name(self) -> str:
        return form_checked(check_name, self.cleaned_data.get("name"))

    def clean_value(self) -> str:
        value = self.cleaned_data.get("value") or ""
        if not value and self.instance.pk:
            return ""
        return form_checked(check_value, value)



@admin.register(OrganizationSecret)
class OrganizationSecretAdmin(TenantScopedAdmin):
    form = OrganizationSecretForm
    list_display = ["name", "organization", "created_at", "updated_at", "updated_by"]
    list_filter = ["organization"]
    search_fields = ["name", "organization__slug"]
    readonly_fields = ["created_at", "updated_at", "updated_by"]

    def get_readonly_fields(self, request: Any, obj: Any = None) -> Any:
        # A secret keeps its organization and name: references elsewhere name it.
        return [*self.readonly_fields, "organization", "name"] if obj else self.readonly_fields

    def save_model(self, request: Any, obj: OrganizationSecret, form: Any, change: bool) -> None:
        value = form.cleaned_data.get("value")
        if not value:
            return  # a change without a new value: nothing to store
        saved, _created = secret_put(organization=obj.organization, name=obj.name, value=value, user=request.user)
        obj.pk = saved.pk
